//! A JVM as a session backend ([`Backend`]): the same commands and answers as every runtime,
//! spoken in JDWP. The command runs as `debug-script` runs it (`launch::start`); the first JVM
//! that connects is the session's (a JVM the program starts later is let go undebugged). Every
//! stop holds the whole VM (`SUSPEND_ALL`), as jdb and IDEs do; a second stop that came at the
//! same moment in another thread is held and shown when the first goes on (its suspension
//! still counts). Breakpoints bind in the classes of their file already loaded and in each
//! one the JVM prepares later; conditions and logpoints are Java expressions evaluated at the
//! hit; steps are the JVM's own (`SINGLE_STEP` by line), stepping into the JDK's classes left
//! out.

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use crossbeam_channel::{never, select, Receiver};
use serde_json::{json, Value as Json};

use super::eval::{self, Frame as At};
use super::launch::{self, Listener};
use super::program::{places, source_roots, File, Jvm, Roots, LIBRARIES};
use super::values::Show;
use super::vm;
use super::wire::{Id, Location as Place, Value};
use super::{kind, parse_composite, suspend, Event, Incoming};
use crate::debugger::backend::{Backend, Happening, Input, Inputs};
use crate::debugger::limits::{VALUE_MAX, VALUE_PREVIEW};
use crate::debugger::model::{
    Action, AttachSpec, BreakpointSpec, Exception, Frame, LaunchSpec, Location, Reason, Resolution,
    Source, Stop, Thread, TraceFrame, Undebugged, Variable, VariablesQuery,
};
use crate::debugger::script::Debugged;
use crate::debugger::session::{self as actor, Begin, Handle, OnChange, Setup};
use crate::debugger::{Code, Failure};
use crate::process::{Debuggee, Exit, Output};

/// How long the first JVM of the command may take to connect.
const CONNECT_WAIT: Duration = Duration::from_secs(30);
/// Classes of the JDK a step into passes over.
const NOT_STEPPED_INTO: &[&str] = &["java.*", "javax.*", "jdk.*", "sun.*", "com.sun.*"];

pub(crate) fn launch(
    id: &str,
    spec: LaunchSpec,
    on_change: OnChange,
    cancel: &Receiver<()>,
) -> Result<(Handle, Json), Failure> {
    actor::start(id, on_change, cancel, move |abandon| {
        Begin::launched(spec, abandon, |command, setup, abandon| {
            Java::start(command, setup, abandon)
        })
    })
}

/// Attaches to a JVM whose agent listens at `address` (`-agentlib:jdwp=transport=dt_socket,
/// server=y,address=…`). The session never ends the program: debug-stop lets go of the JVM.
pub(crate) fn attach(
    id: &str,
    address: std::net::SocketAddr,
    start: AttachSpec,
    on_change: OnChange,
    cancel: &Receiver<()>,
) -> Result<(Handle, Json), Failure> {
    actor::start(id, on_change, cancel, move |_| {
        let refused = |e: std::io::Error| {
            Failure::new(Code::AttachFailed, format!("no JVM's debug agent answered at {address}: {e} (start it with -agentlib:jdwp=transport=dt_socket,server=y,suspend=n,address=127.0.0.1:PORT)"))
        };
        let stream = std::net::TcpStream::connect_timeout(&address, Duration::from_secs(5))
            .map_err(refused)?;
        let (tx, incoming) = crossbeam_channel::unbounded();
        let client = super::Client::start(stream, 0, tx).map_err(refused)?;
        let vm = vm::Vm::new(client)
            .map_err(|e| Failure::new(Code::AttachFailed, format!("the JVM at {address}: {e}")))?;
        let jvm = Jvm::new(0, vm, 0, format!("attached to {address}"));
        // Its files are found by their classes' names: the local folders are where to look.
        let cwd = start.cwd.clone().or_else(|| std::env::current_dir().ok()).unwrap_or_default();
        let mut files: Vec<File> =
            start.breakpoints.iter().map(|b| File::read(b.real_file.clone())).collect();
        files.extend(start.path_mappings.iter().map(|m| File {
            name: String::new(),
            package: String::new(),
            path: m.local.join("_"),
            loaded: false,
        }));
        let roots = source_roots(&cwd, &files);
        let backend = Java::new(jvm, incoming, roots, start.pause_on_exceptions.clone());
        Ok(Begin::attached(backend, address, start))
    })
}

/// A stop: the thread, and its frames as read then.
pub(crate) struct Paused {
    thread: Id,
    frames: Vec<(Id, Place)>,
}

struct Breakpoint {
    spec: BreakpointSpec,
    file: File,
    requests: Vec<i32>,
    /// `{file, line}` of each place it is bound.
    resolved: Vec<Json>,
}

pub(crate) struct Java {
    jvm: Jvm,
    /// The program launched, and the listener its JVMs connect to (open while the session
    /// lasts: a JVM the program starts later connects, and is let go); `None` when attached.
    program: Option<(Listener, Debuggee)>,
    incoming: Receiver<Incoming>,
    exited: Receiver<Exit>,
    roots: super::program::Roots,
    breakpoints: HashMap<String, Breakpoint>,
    /// Breakpoint requests, to the session's breakpoint each carries.
    requests: HashMap<i32, String>,
    /// Class-prepare requests, by source file name.
    watching: HashMap<String, i32>,
    exceptions: Option<i32>,
    step: Option<i32>,
    /// Stops to show once the one shown goes on (and a pause's), one a tick.
    held: VecDeque<Happening<Paused>>,
    /// A stop is shown: a new one is held.
    showing: bool,
    /// The `pauseOnExceptions` it starts with, set as it begins.
    initial_exceptions: String,
    /// `pauseOnExceptions: userUnhandled`: a caught exception stops only where it leaves
    /// the program's own code into a library's.
    user_unhandled: bool,
    /// `stopOnEntry`: asked for, then the request of the first method entry of the program's.
    stop_on_entry: bool,
    entry: Option<i32>,
    /// Whether a thread is the JVM's own (its group is `system`), by thread.
    system: HashMap<Id, bool>,
}

impl Java {
    /// Starts the command and waits for its first JVM, held at its start.
    fn start(
        command: &crate::shell::CommandLine,
        setup: &Setup,
        abandon: &Receiver<()>,
    ) -> Result<Java, Failure> {
        let (listener, mut debuggee) = launch::start(command)?;
        let incoming = listener.incoming.clone();
        let exited = debuggee.exited().clone();
        let deadline = crossbeam_channel::after(CONNECT_WAIT);
        let (conn, client, peer) = loop {
            select! {
                recv(incoming) -> got => match got {
                    Ok(Incoming::Connected { conn, client, peer }) => break (conn, client, peer),
                    Ok(Incoming::Packet(_)) => continue,
                    Err(_) => return Err(Failure::new(Code::Internal, "the JVMs' listener ended")),
                },
                recv(exited) -> exit => {
                    if let Ok(exit) = exit {
                        debuggee.record_exit(exit);
                    }
                    debuggee.settle_output();
                    let stderr = crate::debugger::limits::clip_end(debuggee.output().stderr_text().trim(), 1000);
                    return Err(Failure::new(
                        Code::LaunchFailed,
                        format!("the program ended before a JVM of it connected (is it Java, or does it start `java`?); its stderr: {stderr}"),
                    ));
                },
                recv(deadline) -> _ => {
                    debuggee.kill();
                    return Err(Failure::new(
                        Code::LaunchFailed,
                        format!("no JVM of the command connected within {} s", CONNECT_WAIT.as_secs()),
                    ));
                },
                recv(abandon) -> _ => {
                    debuggee.kill();
                    return Err(Failure::Cancelled);
                },
            }
        };
        let vm = vm::Vm::new(client)
            .map_err(|e| Failure::new(Code::LaunchFailed, format!("the JVM: {e}")))?;
        let pid = launch::pid_of_jvm(&debuggee, peer);
        let jvm = Jvm::new(conn, vm, pid, crate::shell::join(&command.words));
        let cwd = command.cwd.clone().or_else(|| std::env::current_dir().ok()).unwrap_or_default();
        let files: Vec<File> =
            setup.breakpoint_files.iter().map(|f| File::read(f.clone())).collect();
        let roots = source_roots(&cwd, &files);
        let mut java = Java::new(jvm, incoming, roots, setup.pause_on_exceptions.clone());
        java.exited = exited;
        java.program = Some((listener, debuggee));
        java.stop_on_entry = setup.stop_on_entry;
        Ok(java)
    }

    fn new(jvm: Jvm, incoming: Receiver<Incoming>, roots: Roots, exceptions: String) -> Java {
        Java {
            jvm,
            program: None,
            incoming,
            exited: never(),
            roots,
            breakpoints: HashMap::new(),
            requests: HashMap::new(),
            watching: HashMap::new(),
            exceptions: None,
            step: None,
            held: VecDeque::new(),
            showing: false,
            initial_exceptions: exceptions,
            stop_on_entry: false,
            entry: None,
            user_unhandled: false,
            system: HashMap::new(),
        }
    }

    /// Breakpoint `id` set in a class of its file.
    fn bind(&mut self, id: &str, class: Id) {
        let Some(breakpoint) = self.breakpoints.get_mut(id) else { return };
        let Some((locations, line)) = places(&mut self.jvm.vm, class, breakpoint.spec.line) else {
            return;
        };
        for location in &locations {
            let only = self.jvm.vm.out().u8(7).location(location).bytes;
            if let Ok(request) = self.jvm.vm.set_event(kind::BREAKPOINT, suspend::ALL, &[only]) {
                breakpoint.requests.push(request);
                self.requests.insert(request, id.to_string());
            }
        }
        let place = json!({"file": breakpoint.spec.file.display().to_string(), "line": line});
        if !breakpoint.resolved.contains(&place) {
            breakpoint.resolved.push(place);
        }
    }

    /// A class was prepared: the breakpoints of its file are bound in it.
    fn prepared(&mut self, class: Id, signature: String) {
        self.jvm.vm.know_signature(class, signature.clone());
        let source = self.jvm.vm.source_file(class).unwrap_or_default();
        let ids: Vec<String> = (self.breakpoints.iter())
            .filter(|(_, b)| b.file.has(&source, &signature))
            .map(|(id, _)| id.clone())
            .collect();
        for id in ids {
            self.bind(&id, class);
        }
    }

    /// `{type, value}` of an expression in a frame of a stop.
    fn value_of(
        &mut self,
        paused: &Paused,
        expression: &str,
        depth: usize,
        max_chars: usize,
    ) -> Json {
        let at = self.frame(paused, depth);
        eval::evaluate(&mut self.jvm.vm, &mut self.jvm.values, at, expression, max_chars)
    }

    /// Frame `depth` of a stop, its id read again (a method run in the thread ends them).
    fn frame(&self, paused: &Paused, depth: usize) -> At {
        let (id, place) = paused.frames.get(depth).copied().unwrap_or_default();
        let mut at = At { thread: paused.thread, frame: id, depth, at: place };
        at.refresh(&self.jvm.vm);
        at
    }

    fn location(&mut self, place: &Place) -> Location {
        let file = self
            .jvm
            .own_file(&self.roots, place.class)
            .or_else(|| self.jvm.vm.source_file(place.class));
        Location {
            function: self.jvm.function(place),
            file,
            line: self.jvm.vm.line_of(place).unwrap_or(0).max(0) as u64,
            column: None,
            generated: None,
        }
    }

    /// The stop of `thread` (held with the whole VM).
    fn stop(
        &mut self,
        thread: Id,
        reason: Reason,
        hits: Vec<String>,
        exception: Option<Exception>,
    ) -> Option<Happening<Paused>> {
        let frames = self.jvm.vm.all_frames(thread).ok()?;
        let top = frames.first()?.1;
        let location = self.location(&top);
        let count = frames.len();
        Some(Happening::Stopped(Stop {
            reason,
            hits,
            location,
            exception,
            frames: count,
            paused: Paused { thread, frames },
        }))
    }

    /// An exception as a stop shows it.
    fn exception(&mut self, thread: Id, exception: &Value, catch: Place) -> Exception {
        let id = match exception {
            Value::Object(_, id) => *id,
            _ => 0,
        };
        let (class, message) = self.jvm.vm.thrown(id);
        let frames = self.jvm.vm.all_frames(thread).unwrap_or_default();
        let stack = frames
            .iter()
            .map(|(_, place)| {
                let own = self.jvm.own_file(&self.roots, place.class);
                TraceFrame {
                    function: self.jvm.function(place),
                    file: own
                        .clone()
                        .or_else(|| self.jvm.vm.source_file(place.class))
                        .unwrap_or_default(),
                    line: self.jvm.vm.line_of(place).map(|l| l.max(0) as u32),
                    library: own.is_none(),
                }
            })
            .collect();
        Exception {
            class: class.into(),
            message: message.into(),
            stack,
            uncaught: catch.is_none(),
            user_unhandled: false,
        }
    }

    /// A breakpoint's hit: a stop, a logpoint's message, or nothing (its condition is false).
    fn hit(&mut self, request: i32, thread: Id, place: Place) -> Option<Happening<Paused>> {
        let id = self.requests.get(&request)?.clone();
        let spec = self.breakpoints.get(&id)?.spec.clone();
        let frames = self.jvm.vm.frames(thread, 0, 1).ok()?;
        let at = At { thread, frame: frames.first()?.0, depth: 0, at: place };
        if let Some(condition) = &spec.condition {
            let held = eval::evaluate(&mut self.jvm.vm, &mut self.jvm.values, at, condition, 100);
            // A condition that cannot be evaluated stops: its error is for the agent to see.
            if held["value"] == false && held["type"] == "boolean" {
                self.jvm.vm.let_go(None);
                return None;
            }
        }
        if let Some(message) = &spec.log_message {
            let mut text = String::new();
            for part in crate::debugger::model::logpoint_parts(message) {
                match part {
                    crate::debugger::model::Part::Text(t) => text.push_str(t),
                    crate::debugger::model::Part::Expression(e) => {
                        let mut at = at;
                        at.refresh(&self.jvm.vm);
                        let value = eval::evaluate(
                            &mut self.jvm.vm,
                            &mut self.jvm.values,
                            at,
                            e,
                            VALUE_PREVIEW,
                        );
                        match &value["value"] {
                            Json::String(s) => text.push_str(s),
                            other => text.push_str(&super::values::text(other)),
                        }
                    }
                }
            }
            self.jvm.vm.let_go(None);
            return Some(Happening::Logpoint { breakpoint: Some(id), text: text.into() });
        }
        self.stop(thread, Reason::Breakpoint, vec![id], None)
    }

    /// What one packet of the JVM's meant.
    fn packet(&mut self, data: &[u8]) -> Option<Happening<Paused>> {
        let (policy, events) = parse_composite(data, &self.jvm.vm.sizes)?;
        let mut happened = None;
        let mut thread = None;
        for event in events {
            thread = thread.or(event.thread());
            let now = match event {
                Event::ClassPrepare { class, signature, .. } => {
                    self.prepared(class, signature);
                    None
                }
                Event::Breakpoint { request, thread, at } => match self.hit(request, thread, at) {
                    // The hit went on (a false condition, a logpoint): nothing else here holds.
                    None => return None,
                    Some(Happening::Logpoint { breakpoint, text }) => {
                        return Some(Happening::Logpoint { breakpoint, text })
                    }
                    stop => stop,
                },
                Event::MethodEntry { request, thread, .. } if Some(request) == self.entry => {
                    self.jvm.vm.clear_event(kind::METHOD_ENTRY, request);
                    self.entry = None;
                    self.stop(thread, Reason::Entry, Vec::new(), None)
                }
                Event::Step { request, thread, .. } => {
                    self.jvm.vm.clear_event(kind::SINGLE_STEP, request);
                    self.step = None;
                    self.stop(thread, Reason::Step, Vec::new(), None)
                }
                Event::Exception { request, thread, exception, catch, .. }
                    if Some(request) == self.exceptions =>
                {
                    // `userUnhandled`: caught, but by a library the exception reached from
                    // the program's own code; else it goes on.
                    let frames = self.jvm.vm.all_frames(thread).unwrap_or_default();
                    let leaves = self.jvm.leaves_own_code(&self.roots, &frames, catch);
                    match !self.user_unhandled || catch.is_none() || leaves {
                        true => {
                            let mut exception = self.exception(thread, &exception, catch);
                            exception.user_unhandled = leaves;
                            self.stop(thread, Reason::Exception, Vec::new(), Some(exception))
                        }
                        false => None,
                    }
                }
                Event::VmDeath => {
                    self.jvm.ended = true;
                    self.jvm.vm.client.close();
                    None
                }
                _ => None,
            };
            happened = happened.or(now);
        }
        if happened.is_none() {
            match (policy, thread) {
                (suspend::ALL, _) => self.jvm.vm.let_go(None),
                (suspend::EVENT_THREAD, Some(thread)) => self.jvm.vm.let_go(Some(thread)),
                _ => {}
            }
        }
        happened
    }

    /// A stop to show: now, or held while another is shown.
    fn show(&mut self, happening: Happening<Paused>) -> Option<Happening<Paused>> {
        if !matches!(happening, Happening::Stopped(_)) {
            return Some(happening);
        }
        if self.showing {
            self.held.push_back(happening);
            return None;
        }
        self.showing = true;
        Some(happening)
    }

    /// `ClassExclude` modifiers for the JDK's classes: a step into and an exception stop
    /// pass over them.
    fn outside_the_jdk(&self) -> Vec<Vec<u8>> {
        NOT_STEPPED_INTO.iter().map(|p| self.jvm.vm.out().u8(6).string(p).bytes).collect()
    }

    /// Whether a thread is the JVM's own (Reference Handler, Finalizer, Signal Dispatcher…):
    /// its thread group is `system`.
    fn is_system(&mut self, thread: Id) -> bool {
        if let Some(&known) = self.system.get(&thread) {
            return known;
        }
        let system = self.jvm.vm.thread_group_name(thread).is_some_and(|g| g == "system");
        self.system.insert(thread, system);
        system
    }

    /// A local's or a member's value as `debug-variables` lists it: a number, boolean or text
    /// as itself, else a short preview.
    fn variable(&mut self, name: String, value: &Value, thread: Id) -> Variable {
        let mut show = Show {
            vm: &mut self.jvm.vm,
            values: &mut self.jvm.values,
            thread,
            budget: VALUE_PREVIEW,
            truncated: false,
        };
        let kind = show.type_name(value);
        let shown = match value {
            Value::Object(tag, id) if *id != 0 && *tag != super::wire::tag::STRING => {
                show.preview(value).into()
            }
            _ => show.json(value, 1),
        };
        let expandable =
            matches!(value, Value::Object(tag, id) if *id != 0 && *tag != super::wire::tag::STRING);
        Variable { name, kind, value: shown, expandable, scope: None }
    }

    fn variables(&mut self, paused: &Paused, depth: usize) -> Result<Vec<Variable>, Failure> {
        let at = self.frame(paused, depth);
        let Some(locals) = eval::locals(&mut self.jvm.vm, at) else {
            return Err(Failure::new(
                Code::NoVariable,
                "this class was compiled without local variable names: compile with `javac -g` (fields and `this` still evaluate)",
            ));
        };
        Ok(locals
            .into_iter()
            .map(|(name, value)| self.variable(name, &value, paused.thread))
            .collect())
    }
}

impl Backend for Java {
    type Event = Incoming;
    type Paused = Paused;
    const EVALUATES_RUNNING: bool = false;

    fn language(&self) -> &str {
        "java"
    }

    fn inputs(&self) -> Inputs<Incoming> {
        let tick = match self.held.is_empty() || self.showing {
            true => never(),
            false => crossbeam_channel::after(Duration::ZERO),
        };
        Inputs { events: self.incoming.clone(), exited: self.exited.clone(), tick, more: never() }
    }

    fn handle(&mut self, input: Input<Incoming>) -> Option<Happening<Paused>> {
        match input {
            Input::Event(Incoming::Packet(packet)) if packet.conn == self.jvm.conn => {
                match packet.data {
                    Some(data) => {
                        let happening = self.packet(&data)?;
                        self.show(happening)
                    }
                    None => {
                        self.jvm.ended = true;
                        None
                    }
                }
            }
            // A JVM the program started later: let go undebugged (its connection dropped).
            Input::Event(Incoming::Connected { client, .. }) => {
                drop(client);
                None
            }
            Input::Event(Incoming::Packet(_)) | Input::Closed => None,
            Input::Exited(exit) => {
                self.exited = never();
                if let (Some(exit), Some((_, debuggee))) = (exit, self.program.as_mut()) {
                    debuggee.record_exit(exit);
                }
                Some(Happening::Ended(exit.and_then(|e| e.code)))
            }
            Input::Tick => {
                let next = self.held.pop_front()?;
                self.showing = matches!(next, Happening::Stopped(_));
                Some(next)
            }
        }
    }

    fn begin(&mut self) -> Result<(), Failure> {
        let state = std::mem::take(&mut self.initial_exceptions);
        if !state.is_empty() {
            self.pause_on_exceptions(&state, false)?;
        }
        if self.stop_on_entry {
            // The first method of the program's own that runs (its main class's initialiser
            // or `main`), once.
            let mut modifiers: Vec<Vec<u8>> = (LIBRARIES.iter())
                .map(|package| self.jvm.vm.out().u8(6).string(&format!("{package}*")).bytes)
                .collect();
            // Counted last: modifiers apply in order, so only the program's entries count.
            modifiers.push(self.jvm.vm.out().u8(1).i32(1).bytes);
            self.entry = self.jvm.vm.set_event(kind::METHOD_ENTRY, suspend::ALL, &modifiers).ok();
        }
        // Held at its start (`suspend=y`, `VM_START` holds every thread): now it runs.
        self.jvm.vm.let_go(None);
        Ok(())
    }

    fn set_breakpoint(&mut self, id: &str, spec: &BreakpointSpec) -> Result<(), Failure> {
        let file = File::java(&spec.file, &spec.real_file)?;
        if !self.watching.contains_key(&file.name) {
            let only = file.source_match(&self.jvm.vm);
            if let Ok(request) =
                self.jvm.vm.set_event(kind::CLASS_PREPARE, suspend::EVENT_THREAD, &[only])
            {
                self.watching.insert(file.name.clone(), request);
            }
        }
        let loaded: Vec<(Id, String)> = self
            .jvm
            .vm
            .all_classes()
            .into_iter()
            .filter(|(_, signature)| {
                let name = vm::class_name(signature);
                name.rsplit_once('.').map_or("", |(p, _)| p) == file.package
            })
            .collect();
        self.breakpoints.insert(
            id.to_string(),
            Breakpoint { spec: spec.clone(), file, requests: Vec::new(), resolved: Vec::new() },
        );
        for (class, signature) in loaded {
            let source = self.jvm.vm.source_file(class).unwrap_or_default();
            if self.breakpoints[id].file.has(&source, &signature) {
                self.bind(id, class);
            }
        }
        Ok(())
    }

    fn remove_breakpoint(&mut self, id: &str) -> Result<(), Failure> {
        if let Some(breakpoint) = self.breakpoints.remove(id) {
            for request in breakpoint.requests {
                self.requests.remove(&request);
                self.jvm.vm.clear_event(kind::BREAKPOINT, request);
            }
        }
        Ok(())
    }

    fn resolution(&self, id: &str) -> Resolution {
        let Some(breakpoint) = self.breakpoints.get(id) else { return Resolution::default() };
        let reason = breakpoint.resolved.is_empty().then(|| {
            format!("no class of {} is loaded yet: it binds when the JVM loads one (a line with no code in any method never binds)", breakpoint.file.name)
        });
        Resolution { resolved: breakpoint.resolved.clone(), generated: Vec::new(), reason }
    }

    fn resume(&mut self, action: Action, paused: Option<&Paused>) -> Result<(), Failure> {
        let gone = |e: super::Error| Failure::new(Code::NoProcess, e.to_string());
        match (action, paused) {
            (Action::Pause, _) => {
                self.jvm.vm.suspend_all().map_err(gone)?;
                let threads = self.jvm.vm.all_threads();
                let named = |java: &mut Java, name: &str| {
                    threads.iter().copied().find(|t| java.jvm.vm.thread_name(*t) == name)
                };
                let thread = named(self, "main").or_else(|| threads.first().copied());
                if let Some(stop) =
                    thread.and_then(|t| self.stop(t, Reason::Pause, Vec::new(), None))
                {
                    self.held.push_back(stop);
                }
                Ok(())
            }
            (_, None) => Ok(()),
            (Action::Continue, Some(_)) => {
                self.showing = false;
                self.jvm.vm.let_go(None);
                Ok(())
            }
            (step, Some(paused)) => {
                let depth = match step {
                    Action::StepInto => 0,
                    Action::StepOut => 2,
                    _ => 1,
                };
                let mut modifiers =
                    vec![self.jvm.vm.out().u8(10).object(paused.thread).i32(1).i32(depth).bytes];
                modifiers.extend(self.outside_the_jdk());
                let request = self
                    .jvm
                    .vm
                    .set_event(kind::SINGLE_STEP, suspend::ALL, &modifiers)
                    .map_err(gone)?;
                self.step = Some(request);
                self.showing = false;
                self.jvm.vm.let_go(None);
                Ok(())
            }
        }
    }

    fn stack(
        &mut self,
        paused: &Paused,
        max: usize,
        _include_async: bool,
    ) -> (Vec<Frame>, Option<usize>) {
        let frames = paused
            .frames
            .iter()
            .take(max)
            .map(|(_, place)| Frame { location: self.location(place), async_reason: None })
            .collect();
        (frames, None)
    }

    fn locals(&mut self, paused: &Paused, max: usize) -> Vec<Variable> {
        let mut all = self.variables(paused, 0).unwrap_or_default();
        all.truncate(max);
        all
    }

    fn scope_variables(
        &mut self,
        paused: &Paused,
        query: &VariablesQuery,
    ) -> Result<Vec<Variable>, Failure> {
        if !matches!(query.scope.as_str(), "local" | "all") {
            return Err(Failure::new(Code::InvalidArguments, "invalid argument `scope`: a JVM frame has `local` (its locals and `this`); fields are read by `path`").with("field", "scope".into()));
        }
        let all = self.variables(paused, query.frame)?;
        Ok(Variable::page(all, query.start, query.max_items))
    }

    fn expand(
        &mut self,
        paused: &Paused,
        path: &str,
        query: &VariablesQuery,
    ) -> Result<(Json, Json, Vec<Variable>), Failure> {
        let at = self.frame(paused, query.frame);
        let typed =
            eval::evaluate(&mut self.jvm.vm, &mut self.jvm.values, at, path, query.max_chars);
        if typed["type"] == "error" {
            return Err(Failure::new(
                Code::InvalidExpression,
                typed["value"].as_str().unwrap_or_default().to_string(),
            ));
        }
        // The members: an object's fields, an array's or a collection's items, a map's entries.
        let shown = typed["value"].clone();
        let members: Vec<(String, Json)> = match &shown {
            Json::Object(map) => map.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            Json::Array(items) => {
                items.iter().enumerate().map(|(i, v)| (format!("[{i}]"), v.clone())).collect()
            }
            _ => Vec::new(),
        };
        let children = members
            .into_iter()
            .map(|(name, value)| {
                let kind = match &value {
                    Json::Number(_) => "number",
                    Json::String(_) => "String",
                    Json::Bool(_) => "boolean",
                    Json::Null => "null",
                    _ => "object",
                };
                let expandable = matches!(value, Json::Object(_) | Json::Array(_));
                let value = match value {
                    v @ (Json::Object(_) | Json::Array(_)) => super::values::text(&v).into(),
                    v => v,
                };
                Variable { name, kind: kind.into(), value, expandable, scope: None }
            })
            .collect();
        let value = match &shown {
            v @ (Json::Object(_) | Json::Array(_)) => super::values::text(v).into(),
            v => v.clone(),
        };
        Ok((typed["type"].clone(), value, Variable::page(children, query.start, query.max_items)))
    }

    fn evaluate(
        &mut self,
        paused: Option<&Paused>,
        expression: &str,
        frame: usize,
        max_chars: usize,
    ) -> Result<Json, Failure> {
        let paused = paused.ok_or_else(|| {
            Failure::new(
                Code::Running,
                "the JVM evaluates only while stopped: debug-continue {pause: true} first",
            )
        })?;
        if frame >= paused.frames.len() {
            return Err(Failure::new(
                Code::InvalidArguments,
                format!("invalid argument `frame`: the stop has {} frames", paused.frames.len()),
            )
            .with("field", "frame".into()));
        }
        Ok(self.value_of(paused, expression, frame, max_chars.min(VALUE_MAX)))
    }

    fn set_variable(
        &mut self,
        paused: &Paused,
        name: &str,
        value: &str,
        frame: usize,
        _scope: &str,
        max_chars: usize,
    ) -> Result<Json, Failure> {
        let at = self.frame(paused, frame);
        let variables = self.jvm.vm.variables(at.at.class, at.at.method).unwrap_or_default();
        let Some(variable) = variables.iter().find(|v| v.name == name && v.live_at(at.at.index))
        else {
            return Err(Failure::new(
                Code::NoVariable,
                format!(
                    "no local `{name}` in this frame (a field is set by the program, not here yet)"
                ),
            ));
        };
        // The new value: the expression cast to the local's type, read back as the VM holds it.
        let cast = match vm::tag_of(&variable.signature) {
            b'L' | b's' | b'[' | b't' => value.to_string(),
            _ => format!("({}) ({value})", vm::class_name(&variable.signature)),
        };
        let new = eval::value(&mut self.jvm.vm, &mut self.jvm.values, at, &cast)
            .map_err(|m| Failure::new(Code::InvalidExpression, m))?;
        // A method run for the value ended the frame ids: read again.
        let at = self.frame(paused, frame);
        self.jvm.vm.set_frame_value(at.thread, at.frame, variable.slot, &new).map_err(|e| {
            Failure::new(Code::InvalidArguments, format!("cannot set `{name}`: {e}"))
        })?;
        Ok(self.value_of(paused, name, frame, max_chars))
    }

    fn threads(&mut self, paused: Option<&Paused>) -> Result<(Vec<Thread>, String), Failure> {
        let mut threads = Vec::new();
        for thread in self.jvm.vm.all_threads() {
            if !self.is_system(thread) {
                threads
                    .push(Thread { id: thread.to_string(), name: self.jvm.vm.thread_name(thread) });
            }
        }
        Ok((threads, paused.map(|p| p.thread.to_string()).unwrap_or_default()))
    }

    fn select_thread(&mut self, _paused: &Paused, id: &str) -> Result<Stop<Paused>, Failure> {
        let thread: Id = id.parse().map_err(|_| {
            Failure::new(
                Code::InvalidArguments,
                format!("no thread `{id}`: debug-stack {{threads: true}} lists them"),
            )
        })?;
        match self.stop(thread, Reason::Pause, Vec::new(), None) {
            Some(Happening::Stopped(stop)) => Ok(stop),
            _ => Err(Failure::new(
                Code::InvalidArguments,
                format!("thread {id} has no frames to show"),
            )),
        }
    }

    fn pause_on_exceptions(
        &mut self,
        state: &str,
        include_libraries: bool,
    ) -> Result<Option<String>, Failure> {
        if let Some(request) = self.exceptions.take() {
            self.jvm.vm.clear_event(kind::EXCEPTION, request);
        }
        self.user_unhandled = state == "userUnhandled";
        let caught = match state {
            "none" => return Ok(None),
            "all" | "userUnhandled" => true,
            _ => false,
        };
        let mut modifiers = vec![self.jvm.vm.out().u8(8).class(0).bool(caught).bool(true).bytes];
        // Thrown in the JDK's classes, left out; but for userUnhandled, where what matters
        // is who catches it (`Integer.parseInt` throws for the program's own call).
        if !include_libraries && !self.user_unhandled {
            modifiers.extend(self.outside_the_jdk());
        }
        let request = self
            .jvm
            .vm
            .set_event(kind::EXCEPTION, suspend::ALL, &modifiers)
            .map_err(|e| Failure::new(Code::NoProcess, e.to_string()))?;
        self.exceptions = Some(request);
        Ok(None)
    }

    fn loaded_sources(
        &mut self,
        _paused: Option<&Paused>,
        _include_internal: bool,
    ) -> Result<Vec<Source>, Failure> {
        Ok(Vec::new())
    }

    fn source_text(&mut self, file: &str) -> Result<Json, Failure> {
        Err(Failure::new(
            Code::FileNotFound,
            format!("{file}: a JVM's classes have no source of their own; read the file"),
        ))
    }

    fn output(&self) -> Output {
        self.program.as_ref().map(|(_, debuggee)| debuggee.output().clone()).unwrap_or_default()
    }

    fn undebugged(&self) -> Undebugged {
        match &self.program {
            Some((_, debuggee)) => Undebugged::of(debuggee, &[self.jvm.pid]),
            None => Undebugged::default(),
        }
    }

    fn processes(&self) -> Vec<Json> {
        vec![Debugged {
            pid: self.jvm.pid,
            command: &self.jvm.command,
            parent: None,
            hits: None,
            threads: Vec::new(),
        }
        .to_json()]
    }

    fn end(&mut self, _code: Option<i32>, forced: bool) -> Exit {
        let Some((_, debuggee)) = self.program.as_mut() else {
            // Attached: let go of the JVM (its requests cleared, its threads resumed); it runs on.
            self.jvm.vm.dispose();
            self.jvm.vm.client.close();
            return Exit { code: None, signal: None };
        };
        let exit = match forced {
            true => debuggee.kill(),
            false => debuggee.finish(Duration::from_secs(1)),
        };
        self.jvm.vm.client.close();
        debuggee.settle_output();
        exit
    }

    fn attached_note(&self) -> Option<String> {
        self.program.is_none().then(|| {
            "attached to a JVM: debug-mcp let go of it and it runs on; its output and exit code are not seen here".to_string()
        })
    }

    fn shutdown(&mut self) {
        if self.program.is_none() {
            self.jvm.vm.dispose();
        }
        self.jvm.vm.client.close();
        if let Some((_, debuggee)) = self.program.as_mut() {
            debuggee.kill();
        }
    }
}
