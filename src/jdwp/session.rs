//! A JVM as a session backend ([`Backend`]): the same commands and answers as every runtime,
//! spoken in JDWP. The command runs as `debug-script` runs it (`launch::start`); every JVM it
//! starts connects (Maven's, then surefire's fork; Gradle's test workers) and is debugged,
//! each a process of the session (`events.rs`). Every stop holds its whole VM (`SUSPEND_ALL`),
//! as jdb and IDEs do; one stop is shown at a time ([`Turns`]), another that came meanwhile
//! (another thread's, another JVM's) held until the shown one goes on. Breakpoints bind in the
//! classes of their file already loaded and in each one a JVM prepares later; conditions and
//! logpoints are Java expressions evaluated at the hit; steps are the JVM's own
//! (`SINGLE_STEP` by line), stepping into the JDK's classes left out.

mod events;
mod watch;

use std::collections::HashMap;
use std::time::Duration;

use crossbeam_channel::{never, select, Receiver};
use serde_json::{json, Value as Json};

use super::eval::{self, Frame as At};
use super::launch::{self, Listener};
use super::program::{source_roots, File, Jvm, Roots};
use super::values::Show;
use super::vm::Vm;
use super::wire::{Id, Location as Place, Value};
use super::{kind, suspend, Incoming};
use crate::debugger::backend::{Backend, Happening, Input, Inputs};
use crate::debugger::limits::{clip, VALUE_MAX, VALUE_PREVIEW};
use crate::debugger::model::{
    Action, AttachSpec, BreakpointSpec, Frame, LaunchSpec, Reason, Resolution, Source, Stop,
    Thread, Undebugged, Variable, VariablesQuery,
};
use crate::debugger::script::Debugged;
use crate::debugger::session::{self as actor, Begin, Handle, OnChange, Setup};
use crate::debugger::turns::{Turn, Turns};
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
        let vm = Vm::new(client)
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

/// A stop: which JVM (its index in [`Java::machines`]), the thread, its frames as read then,
/// and why (to show it again after another thread was looked at).
pub(crate) struct Paused {
    jvm: usize,
    thread: Id,
    frames: Vec<(Id, Place)>,
    reason: Reason,
    hits: Vec<String>,
}

impl Turn for Paused {
    type Key = (usize, Id);
    fn turn(&self) -> (usize, Id) {
        (self.jvm, self.thread)
    }
}

struct Breakpoint {
    spec: BreakpointSpec,
    file: File,
    /// `{file, line}` of each place it is bound (in any JVM).
    resolved: Vec<Json>,
}

/// One JVM of the session, with the requests set in it.
struct Machine {
    jvm: Jvm,
    /// Breakpoint requests, to the session's breakpoint each carries.
    requests: HashMap<i32, String>,
    /// Class-prepare requests, by source file name.
    watching: HashMap<String, i32>,
    exceptions: Option<i32>,
    step: Option<i32>,
    /// `stopOnEntry`'s request (the first JVM's).
    entry: Option<i32>,
    /// Watchpoints' requests.
    watches: HashMap<i32, watch::Watch>,
    /// The step past a watched field's write, to stop after it.
    written: Option<i32>,
    /// Whether a thread is the JVM's own (its group is `system`), by thread.
    system: HashMap<Id, bool>,
}

impl Machine {
    fn new(jvm: Jvm) -> Machine {
        Machine {
            jvm,
            requests: HashMap::new(),
            watching: HashMap::new(),
            exceptions: None,
            step: None,
            entry: None,
            watches: HashMap::new(),
            written: None,
            system: HashMap::new(),
        }
    }

    /// Whether a thread is the JVM's own (Reference Handler, Finalizer, Signal
    /// Dispatcher…): its thread group is `system`.
    fn is_system(&mut self, thread: Id) -> bool {
        if let Some(&known) = self.system.get(&thread) {
            return known;
        }
        let system = self.jvm.vm.thread_group_name(thread).is_some_and(|g| g == "system");
        self.system.insert(thread, system);
        system
    }

    /// The program's threads (not the JVM's own).
    fn threads(&mut self) -> Vec<Id> {
        let all = self.jvm.vm.all_threads();
        all.into_iter().filter(|t| !self.is_system(*t)).collect()
    }
}

pub(crate) struct Java {
    /// The JVMs of the program, in the order they connected; one that ended stays (its
    /// index names it in stops) marked `ended`.
    machines: Vec<Machine>,
    /// The program launched, and the listener its JVMs connect to (open while the session
    /// lasts); `None` when attached.
    program: Option<(Listener, Debuggee)>,
    /// The command as typed: the name of the JVM it starts.
    typed: Vec<String>,
    incoming: Receiver<Incoming>,
    exited: Receiver<Exit>,
    roots: Roots,
    breakpoints: HashMap<String, Breakpoint>,
    turns: Turns<Paused>,
    /// `pauseOnExceptions` (`""` for none), set in every JVM as it connects; and whether
    /// exceptions thrown in the JDK's classes count.
    exceptions: String,
    include_libraries: bool,
    /// `stopOnEntry`: the first JVM stops at the first method of the program's own.
    stop_on_entry: bool,
    /// Packets of a JVM that came before its connection was taken, by connection.
    early: HashMap<usize, Vec<Option<Vec<u8>>>>,
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
        let jvm = Jvm::connected(conn, client, peer, &debuggee, &command.words, &[])
            .map_err(|e| Failure::new(Code::LaunchFailed, format!("the JVM: {e}")))?;
        let cwd = command.cwd.clone().or_else(|| std::env::current_dir().ok()).unwrap_or_default();
        let files: Vec<File> =
            setup.breakpoint_files.iter().map(|f| File::read(f.clone())).collect();
        let roots = source_roots(&cwd, &files);
        let mut java = Java::new(jvm, incoming, roots, setup.pause_on_exceptions.clone());
        java.exited = exited;
        java.program = Some((listener, debuggee));
        java.typed = command.words.clone();
        java.stop_on_entry = setup.stop_on_entry;
        Ok(java)
    }

    fn new(jvm: Jvm, incoming: Receiver<Incoming>, roots: Roots, exceptions: String) -> Java {
        Java {
            machines: vec![Machine::new(jvm)],
            program: None,
            typed: Vec::new(),
            incoming,
            exited: never(),
            roots,
            breakpoints: HashMap::new(),
            turns: Turns::default(),
            exceptions,
            include_libraries: false,
            stop_on_entry: false,
            early: HashMap::new(),
        }
    }

    /// The JVMs that run (or are stopped), by index.
    fn live(&self) -> Vec<usize> {
        (0..self.machines.len()).filter(|&m| !self.machines[m].jvm.ended).collect()
    }

    /// A thread's id in answers: the JVM's for the first JVM's, `pid/id` for another's.
    fn thread_id(&self, m: usize, thread: Id) -> String {
        match m {
            0 => thread.to_string(),
            _ => format!("{}/{thread}", self.machines[m].jvm.pid),
        }
    }

    /// The JVM and thread an id of [`Java::thread_id`] names.
    fn thread_of(&self, id: &str) -> Result<(usize, Id), Failure> {
        let unknown = || {
            Failure::new(
                Code::InvalidArguments,
                format!("no thread `{id}`: debug-stack {{threads: true}} lists them"),
            )
        };
        let (m, thread) = match id.split_once('/') {
            None => (0, id),
            Some((pid, thread)) => {
                let m = self.machines.iter().position(|x| x.jvm.pid.to_string() == pid);
                (m.filter(|&m| m > 0).ok_or_else(unknown)?, thread)
            }
        };
        Ok((m, thread.parse().map_err(|_| unknown())?))
    }

    /// `pauseOnExceptions` as set, in JVM `m`: its exception request replaced.
    fn catch_exceptions(&mut self, m: usize) -> Result<(), Failure> {
        let machine = &mut self.machines[m];
        let vm = &machine.jvm.vm;
        if let Some(request) = machine.exceptions.take() {
            vm.clear_event(kind::EXCEPTION, request);
        }
        let user_unhandled = self.exceptions == "userUnhandled";
        let caught = match self.exceptions.as_str() {
            "all" | "userUnhandled" => true,
            "uncaught" => false,
            _ => return Ok(()),
        };
        let mut modifiers = vec![vm.out().u8(8).class(0).bool(caught).bool(true).bytes];
        // Thrown in the JDK's classes, left out; but for userUnhandled, where what matters
        // is who catches it (`Integer.parseInt` throws for the program's own call).
        if !self.include_libraries && !user_unhandled {
            modifiers.extend(outside_the_jdk(vm));
        }
        let request = vm
            .set_event(kind::EXCEPTION, suspend::ALL, &modifiers)
            .map_err(|e| Failure::new(Code::NoProcess, e.to_string()))?;
        machine.exceptions = Some(request);
        Ok(())
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
        let jvm = &mut self.machines[paused.jvm].jvm;
        eval::evaluate(&mut jvm.vm, &mut jvm.values, at, expression, max_chars)
    }

    /// Frame `depth` of a stop, its id read again (a method run in the thread ends them).
    fn frame(&self, paused: &Paused, depth: usize) -> At {
        let (id, place) = paused.frames.get(depth).copied().unwrap_or_default();
        let mut at = At { thread: paused.thread, frame: id, depth, at: place };
        at.refresh(&self.machines[paused.jvm].jvm.vm);
        at
    }

    /// A local's or a member's value as `debug-variables` lists it: a number, boolean or text
    /// as itself, else a short preview.
    fn variable(&mut self, m: usize, name: String, value: &Value, thread: Id) -> Variable {
        let jvm = &mut self.machines[m].jvm;
        let mut show = Show {
            vm: &mut jvm.vm,
            values: &mut jvm.values,
            thread,
            budget: VALUE_PREVIEW,
            truncated: false,
        };
        let kind = show.type_name(value);
        let expandable =
            matches!(value, Value::Object(tag, id) if *id != 0 && *tag != super::wire::tag::STRING);
        let shown = match expandable {
            true => show.preview(value).into(),
            false => show.json(value, 1),
        };
        Variable { name, kind, value: shown, expandable, scope: None }
    }

    fn variables(&mut self, paused: &Paused, depth: usize) -> Result<Vec<Variable>, Failure> {
        let at = self.frame(paused, depth);
        let Some(locals) = eval::locals(&mut self.machines[paused.jvm].jvm.vm, at) else {
            return Err(Failure::new(
                Code::NoVariable,
                "this class was compiled without local variable names: compile with `javac -g` (fields and `this` still evaluate)",
            ));
        };
        Ok(locals
            .into_iter()
            .map(|(name, value)| self.variable(paused.jvm, name, &value, paused.thread))
            .collect())
    }
}

/// `ClassExclude` modifiers for the JDK's classes: a step into and an exception stop pass
/// over them.
fn outside_the_jdk(vm: &Vm) -> Vec<Vec<u8>> {
    NOT_STEPPED_INTO.iter().map(|p| vm.out().u8(6).string(p).bytes).collect()
}

impl Backend for Java {
    type Event = Incoming;
    type Paused = Paused;
    const EVALUATES_RUNNING: bool = false;

    fn language(&self) -> &str {
        "java"
    }

    fn inputs(&self) -> Inputs<Incoming> {
        let tick = match self.turns.due() {
            true => crossbeam_channel::after(Duration::ZERO),
            false => never(),
        };
        Inputs { events: self.incoming.clone(), exited: self.exited.clone(), tick, more: never() }
    }

    fn handle(&mut self, input: Input<Incoming>) -> Option<Happening<Paused>> {
        match input {
            Input::Event(Incoming::Packet(packet)) => {
                match self.machines.iter().position(|m| m.jvm.conn == packet.conn) {
                    Some(m) => self.received(m, packet.data),
                    None => {
                        self.early.entry(packet.conn).or_default().push(packet.data);
                        None
                    }
                }
            }
            Input::Event(Incoming::Connected { conn, client, peer }) => {
                self.adopt(conn, client, peer)
            }
            Input::Closed => None,
            Input::Exited(exit) => {
                self.exited = never();
                if let (Some(exit), Some((_, debuggee))) = (exit, self.program.as_mut()) {
                    debuggee.record_exit(exit);
                }
                Some(Happening::Ended(exit.and_then(|e| e.code)))
            }
            Input::Tick => self.turns.next(),
        }
    }

    fn begin(&mut self) -> Result<(), Failure> {
        self.catch_exceptions(0)?;
        if self.stop_on_entry {
            // The first method of the program's own that runs (its main class's initialiser
            // or `main`), once.
            let vm = &self.machines[0].jvm.vm;
            let mut modifiers: Vec<Vec<u8>> = (super::program::LIBRARIES.iter())
                .map(|package| vm.out().u8(6).string(&format!("{package}*")).bytes)
                .collect();
            // Counted last: modifiers apply in order, so only the program's entries count.
            modifiers.push(vm.out().u8(1).i32(1).bytes);
            self.machines[0].entry =
                vm.set_event(kind::METHOD_ENTRY, suspend::ALL, &modifiers).ok();
        }
        // Held at its start (`suspend=y`, `VM_START` holds every thread): now it runs.
        self.machines[0].jvm.vm.let_go(None);
        Ok(())
    }

    fn set_breakpoint(&mut self, id: &str, spec: &BreakpointSpec) -> Result<(), Failure> {
        let file = File::java(&spec.file, &spec.real_file)?;
        self.breakpoints
            .insert(id.to_string(), Breakpoint { spec: spec.clone(), file, resolved: Vec::new() });
        for m in self.live() {
            self.watch(m, id);
        }
        Ok(())
    }

    fn set_watchpoint(
        &mut self,
        id: &str,
        expression: &str,
        access: &str,
        paused: &Paused,
    ) -> Result<String, Failure> {
        let kinds: &[u8] = match access {
            "read" => &[kind::FIELD_ACCESS],
            "readWrite" => &[kind::FIELD_ACCESS, kind::FIELD_MODIFICATION],
            _ => &[kind::FIELD_MODIFICATION],
        };
        let at = self.frame(paused, 0);
        let jvm = &mut self.machines[paused.jvm].jvm;
        let field = eval::field_named(&mut jvm.vm, &mut jvm.values, at, expression)
            .map_err(|e| Failure::new(Code::InvalidExpression, e).with("field", "data".into()))?;
        self.watch_field(paused.jvm, id, field, kinds)
    }

    fn remove_watchpoint(&mut self, id: &str) -> Result<(), Failure> {
        self.unwatch(id);
        Ok(())
    }

    fn remove_breakpoint(&mut self, id: &str) -> Result<(), Failure> {
        self.breakpoints.remove(id);
        for machine in &mut self.machines {
            let requests: Vec<i32> =
                machine.requests.iter().filter(|(_, b)| *b == id).map(|(r, _)| *r).collect();
            for request in requests {
                machine.requests.remove(&request);
                machine.jvm.vm.clear_event(kind::BREAKPOINT, request);
            }
        }
        Ok(())
    }

    fn resolution(&self, id: &str) -> Resolution {
        let Some(breakpoint) = self.breakpoints.get(id) else { return Resolution::default() };
        let reason = breakpoint.resolved.is_empty().then(|| {
            format!("no class of {} is loaded yet: it binds when a JVM loads one (a line with no code in any method never binds)", breakpoint.file.name)
        });
        Resolution { resolved: breakpoint.resolved.clone(), generated: Vec::new(), reason }
    }

    fn resume(&mut self, action: Action, paused: Option<&Paused>) -> Result<(), Failure> {
        let gone = |e: super::Error| Failure::new(Code::NoProcess, e.to_string());
        match (action, paused) {
            (Action::Pause, _) => {
                // Every JVM, the newest (a build tool's fork runs the tests) shown first.
                for m in self.live().into_iter().rev() {
                    let machine = &mut self.machines[m];
                    machine.jvm.vm.suspend_all().map_err(gone)?;
                    let threads = machine.threads();
                    let main =
                        threads.iter().copied().find(|t| machine.jvm.vm.thread_name(*t) == "main");
                    if let Some(stop) = main
                        .or_else(|| threads.first().copied())
                        .and_then(|t| self.stop(m, t, Reason::Pause, Vec::new(), None))
                    {
                        self.turns.hold(Happening::Stopped(stop));
                    }
                }
                Ok(())
            }
            (_, None) => Ok(()),
            (Action::Continue, Some(paused)) => {
                self.turns.went_on(false);
                self.machines[paused.jvm].jvm.vm.let_go(None);
                Ok(())
            }
            (step, Some(paused)) => {
                let depth = match step {
                    Action::StepInto => 0,
                    Action::StepOut => 2,
                    _ => 1,
                };
                let machine = &mut self.machines[paused.jvm];
                let vm = &machine.jvm.vm;
                let mut modifiers =
                    vec![vm.out().u8(10).object(paused.thread).i32(1).i32(depth).bytes];
                modifiers.extend(outside_the_jdk(vm));
                let request =
                    vm.set_event(kind::SINGLE_STEP, suspend::ALL, &modifiers).map_err(gone)?;
                machine.step = Some(request);
                // Not kept the turn: a step that ends its thread never stops again.
                self.turns.went_on(false);
                machine.jvm.vm.let_go(None);
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
            .map(|(_, place)| Frame {
                location: self.location(paused.jvm, place),
                async_reason: None,
            })
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
        let typed = self.value_of(paused, path, query.frame, query.max_chars);
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
                Variable { name, kind: kind.into(), value: flat(value), expandable, scope: None }
            })
            .collect();
        Ok((
            typed["type"].clone(),
            flat(shown),
            Variable::page(children, query.start, query.max_items),
        ))
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
        let jvm = &mut self.machines[paused.jvm].jvm;
        eval::assign(&mut jvm.vm, &mut jvm.values, at, name, value).map_err(|message| {
            let code = match message.starts_with("cannot find symbol") {
                true => Code::NoVariable,
                false => Code::InvalidExpression,
            };
            Failure::new(code, format!("cannot set `{name}`: {message}"))
        })?;
        Ok(self.value_of(paused, name, frame, max_chars))
    }

    fn threads(&mut self, paused: Option<&Paused>) -> Result<(Vec<Thread>, String), Failure> {
        let mut listed = Vec::new();
        for m in self.live() {
            listed.extend(self.machines[m].threads().into_iter().map(|thread| (m, thread)));
        }
        // A virtual thread (Java 21) is in no list of the JVM's threads, but one stopped is.
        let stopped = paused.map(|p| (p.jvm, p.thread)).into_iter().chain(self.turns.held_turns());
        for at in stopped.collect::<Vec<_>>() {
            if !listed.contains(&at) {
                listed.push(at);
            }
        }
        let mut threads = Vec::new();
        for (m, thread) in listed {
            let held = if self.turns.holds(&(m, thread)) { ", paused" } else { "" };
            let name = match self.machines[m].jvm.vm.thread_name(thread) {
                name if name.is_empty() => "virtual".to_string(),
                name => name,
            };
            threads.push(Thread { id: self.thread_id(m, thread), name: format!("{name}{held}") });
        }
        Ok((threads, paused.map(|p| self.thread_id(p.jvm, p.thread)).unwrap_or_default()))
    }

    /// Another thread of the stopped JVM, seen as the stop (its JVM is stopped whole); or a
    /// thread of another JVM whose stop is held, shown (the stop shown until now held in
    /// turn).
    fn select_thread(&mut self, paused: &Paused, id: &str) -> Result<Stop<Paused>, Failure> {
        let (m, thread) = self.thread_of(id)?;
        if m != paused.jvm {
            let Some(stop) = self.turns.take_held(&(m, thread)) else {
                return Err(Failure::new(
                    Code::InvalidArguments,
                    format!("thread {id} is in another JVM (pid {}), which runs: its stops are shown in turn (debug-continue), or debug-continue {{pause: true}} stops every JVM", self.machines[m].jvm.pid),
                ));
            };
            let (reason, hits) = (paused.reason, paused.hits.clone());
            if let Some(shown) = self.stop(paused.jvm, paused.thread, reason, hits, None) {
                self.turns.hold_first(shown, (m, thread));
            }
            return Ok(stop);
        }
        self.stop(m, thread, Reason::Pause, Vec::new(), None).ok_or_else(|| {
            Failure::new(Code::InvalidArguments, format!("thread {id} has no frames to show"))
        })
    }

    fn pause_on_exceptions(
        &mut self,
        state: &str,
        include_libraries: bool,
    ) -> Result<Option<String>, Failure> {
        self.exceptions = state.to_string();
        self.include_libraries = include_libraries;
        for m in self.live() {
            self.catch_exceptions(m)?;
        }
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
        let pids: Vec<u32> = self.machines.iter().map(|m| m.jvm.pid).collect();
        match &self.program {
            Some((_, debuggee)) => Undebugged::of(debuggee, &pids),
            None => Undebugged::default(),
        }
    }

    fn processes(&self) -> Vec<Json> {
        let debugged = self.machines.iter().map(|m| Debugged {
            pid: m.jvm.pid,
            command: &m.jvm.command,
            parent: m.jvm.parent,
            hits: None,
            threads: Vec::new(),
        });
        match &self.program {
            Some((_, debuggee)) => crate::debugger::script::listed(debuggee.pid(), debugged),
            // Attached: its process is not known here.
            None => Vec::new(),
        }
    }

    fn stopped_in(&self, paused: &Paused) -> Option<Json> {
        // An attached JVM's process is not known here.
        let jvm = Some(&self.machines[paused.jvm].jvm).filter(|j| j.pid != 0)?;
        let mut process =
            json!({"pid": jvm.pid, "thread": self.thread_id(paused.jvm, paused.thread)});
        if paused.jvm > 0 {
            process["command"] = clip(&jvm.command, 200).into();
        }
        Some(process)
    }

    fn end(&mut self, _code: Option<i32>, forced: bool) -> Exit {
        let Some((_, debuggee)) = self.program.as_mut() else {
            // Attached: let go of the JVM (its requests cleared, its threads resumed); it runs on.
            let jvm = &mut self.machines[0].jvm;
            jvm.vm.dispose();
            jvm.vm.client.close();
            return Exit { code: None, signal: None };
        };
        let exit = match forced {
            true => debuggee.kill(),
            false => debuggee.finish(Duration::from_secs(1)),
        };
        for machine in &mut self.machines {
            machine.jvm.vm.client.close();
        }
        debuggee.settle_output();
        exit
    }

    fn attached_note(&self) -> Option<String> {
        self.program.is_none().then(|| {
            "attached to a JVM: debug-mcp let go of it and it runs on; its output and exit code are not seen here".to_string()
        })
    }

    fn shutdown(&mut self) {
        for machine in &mut self.machines {
            if self.program.is_none() {
                machine.jvm.vm.dispose();
            }
            machine.jvm.vm.client.close();
        }
        if let Some((_, debuggee)) = self.program.as_mut() {
            debuggee.kill();
        }
    }
}

/// A member's value as a line: an object or array as its preview text.
fn flat(value: Json) -> Json {
    match value {
        v @ (Json::Object(_) | Json::Array(_)) => super::values::text(&v).into(),
        v => v,
    }
}
