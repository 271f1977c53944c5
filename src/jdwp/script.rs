//! `debug-script` on the JVM: every JVM the command starts connects to us (`launch.rs`); each
//! gets a class-prepare request per probed file (by its source file name, checked against the
//! file's package), a breakpoint at each probed line as a class of that file is prepared, and
//! with `failures` an exception request. A hit is read in the stopped thread (the expression
//! evaluated, or the frame's locals) and the thread goes on.

use std::collections::HashMap;
use std::path::Path;

use crossbeam_channel::Receiver;
use serde_json::{json, Value as Json};

use super::eval::{self, Frame};
use super::launch::{self, Listener};
use super::program::{is_library, places, source_roots, File, Jvm};
use super::values::Show;
use super::vm::{self, Vm};
use super::wire::{Id, Location, Value};
use super::{kind, parse_composite, suspend, Event, Incoming, Packet};
use crate::call::Call;
use crate::debugger::backend::{Input, Inputs};
use crate::debugger::limits;
use crate::debugger::model::Undebugged;
use crate::debugger::script::{Collector, Debugged, Hit, Outcome, Plan, Step};
use crate::debugger::{Code, Failure};
use crate::process::{Debuggee, Exit};

/// Frames a hit's `stack` lists.
const STACK_FRAMES: usize = 10;
/// Frames shown of a failure none of whose frames is the program's own.
const LIBRARY_FRAMES: usize = 3;

pub(crate) fn run(plan: &Plan, call: &Call) -> Result<Outcome, Failure> {
    let deadline = std::time::Instant::now() + plan.timeout;
    let files = watched_files(plan)?;
    for probe in plan.watched() {
        for text in [&probe.expression, &probe.condition].into_iter().flatten() {
            if let Err(e) = super::expr::check(text) {
                return Err(Failure::new(
                    Code::InvalidExpression,
                    format!("cannot read `{text}` as a Java expression: {e}"),
                ));
            }
        }
    }
    let command = &plan.command;
    let (listener, debuggee) = launch::start(command)?;
    call.log.send("info", format!("program started (pid {})", debuggee.pid()));
    let cwd = command.cwd.clone().or_else(|| std::env::current_dir().ok()).unwrap_or_default();
    let mut run = Run {
        plan,
        exited: debuggee.exited().clone(),
        incoming: listener.incoming.clone(),
        _listener: listener,
        debuggee,
        top_exited: false,
        jvms: Vec::new(),
        early: HashMap::new(),
        roots: source_roots(&cwd, &files),
        probes: plan.watched().iter().map(|p| (p.line, file_index(&files, &p.real_file))).collect(),
        files,
        resolved: vec![None; plan.watched().len().max(1)],
        capped: false,
        pending: std::collections::VecDeque::new(),
        tracers: HashMap::new(),
    };
    crate::debugger::runs::drive(&mut run, Ok(()), plan, call, deadline)
}

fn file_index(files: &[File], path: &Path) -> usize {
    files.iter().position(|f| f.path == path).unwrap_or(0)
}

fn watched_files(plan: &Plan) -> Result<Vec<File>, Failure> {
    let mut files: Vec<File> = Vec::new();
    let probed = plan.watched().into_iter().map(|p| (p.file, p.real_file));
    let traced = plan.calls.iter().map(|c| (c.file.clone(), c.real_file.clone()));
    for (asked, real_file) in probed.chain(traced) {
        if files.iter().any(|f| f.path == real_file) {
            continue;
        }
        files.push(File::java(&asked, &real_file)?);
    }
    Ok(files)
}

struct Run<'a> {
    plan: &'a Plan,
    /// Open while the run lasts: JVMs the program starts later connect to it.
    _listener: Listener,
    incoming: Receiver<Incoming>,
    debuggee: Debuggee,
    exited: Receiver<Exit>,
    top_exited: bool,
    jvms: Vec<Jvm>,
    /// Packets of a connection not set up yet.
    early: HashMap<usize, Vec<Packet>>,
    roots: super::program::Roots,
    files: Vec<File>,
    /// Each probe's line and file (an index into `files`).
    probes: Vec<(u32, usize)>,
    /// The line each probe resolved to.
    resolved: Vec<Option<u32>>,
    capped: bool,
    /// With `calls`: each JVM's traced calls, by its connection.
    tracers: HashMap<usize, super::calls::Tracer>,
    /// Steps of one event composite past its first (two probes on one line), one a tick.
    pending: std::collections::VecDeque<Step>,
}

impl Run<'_> {
    /// Sets up a JVM that connected: its requests, then lets it start.
    fn connected(
        &mut self,
        conn: usize,
        client: super::Client,
        peer: std::net::SocketAddr,
    ) -> Result<Step, Failure> {
        let others: Vec<u32> = self.jvms.iter().map(|j| j.pid).collect();
        let mut jvm =
            Jvm::connected(conn, client, peer, &self.debuggee, &self.plan.command.words, &others)
                .map_err(|e| Failure::new(Code::Internal, format!("a JVM of the program: {e}")))?;
        if !self.capped {
            for file in &self.files {
                let only = [file.source_match(&jvm.vm)];
                let _ = jvm.vm.set_event(kind::CLASS_PREPARE, suspend::EVENT_THREAD, &only);
            }
        }
        if self.plan.failures.is_some() {
            // Every exception, caught or not: which are failures is decided as each comes.
            let only = jvm.vm.out().u8(8).class(0).bool(true).bool(true).bytes;
            jvm.failures = jvm.vm.set_event(kind::EXCEPTION, suspend::EVENT_THREAD, &[only]).ok();
        }
        if !self.plan.calls.is_empty() {
            super::calls::Tracer::watch_throws(&jvm.vm);
            let only = self.plan.calls.iter().map(|c| c.function.clone()).collect();
            self.tracers.insert(conn, super::calls::Tracer::new(only, self.plan.max_calls));
            // A traced method a value's `toString()` called would stop in itself.
            jvm.values.no_calls = true;
        }
        self.jvms.push(jvm);
        for packet in self.early.remove(&conn).unwrap_or_default() {
            self.packet(packet)?;
        }
        Ok(Step::Go)
    }

    fn packet(&mut self, packet: Packet) -> Result<Step, Failure> {
        let Some(at) = self.jvms.iter().position(|j| j.conn == packet.conn) else {
            self.early.entry(packet.conn).or_default().push(packet);
            return Ok(Step::Go);
        };
        let mut read = packet.read;
        let Some(data) = packet.data else {
            self.jvms[at].ended = true;
            return Ok(self.ended());
        };
        let Some((policy, events)) = parse_composite(&data, &self.jvms[at].vm.sizes) else {
            crate::log::warn(format_args!("an unreadable JDWP event"));
            return Ok(Step::Go);
        };
        let mut steps = Vec::new();
        let mut thread = None;
        // Probes on one line report in their order.
        let mut events = events;
        let probe_of = |event: &Event| match event {
            Event::Breakpoint { request, .. } => self.jvms[at].breakpoints.get(request).copied(),
            _ => None,
        };
        events.sort_by_key(|e| probe_of(e));
        let alone = events.len() == 1;
        let mut resumed = false;
        for event in events {
            thread = thread.or(event.thread());
            match event {
                Event::VmStart { .. } => {}
                // The JVM waits ~300 ms at its exit for a debugger that stays connected.
                Event::VmDeath => {
                    self.jvms[at].ended = true;
                    self.jvms[at].vm.client.close();
                }
                Event::ClassPrepare { class, signature, .. } => self.prepared(at, class, signature),
                Event::Breakpoint { request, thread, at: location } => {
                    let jvm = &mut self.jvms[at];
                    let tracer = self.tracers.get_mut(&jvm.conn);
                    if tracer.is_some_and(|t| t.counted(request)) {
                        continue;
                    }
                    if let Some(&probe) = self.jvms[at].breakpoints.get(&request) {
                        let read = read.take();
                        if let Some(hit) =
                            self.hit(at, probe, (thread, location), alone, read, &mut resumed)?
                        {
                            steps.push(Step::Hit(hit));
                        }
                    }
                }
                Event::Exception { request, thread, at: location, exception, catch } => {
                    if let Some(mut traced) = self.traced(at) {
                        traced.thrown(thread, &exception, catch);
                    }
                    if self.jvms[at].failures != Some(request) {
                        continue;
                    }
                    if let Some(record) = self.exception(at, thread, location, &exception, catch) {
                        steps.push(Step::Failed(record));
                    }
                }
                Event::MethodEntry { request, thread, at: location } => {
                    if let Some(mut traced) = self.traced(at) {
                        traced.entered(request, thread, location);
                    }
                }
                Event::MethodExit { request, thread, at: location, value } => {
                    if let Some(mut traced) = self.traced(at) {
                        traced.exited(request, thread, location, &value);
                    }
                }
                _ => {}
            }
        }
        // Its reply is not waited for: the next event says the program went on.
        let vm = &self.jvms[at].vm;
        match (policy, thread) {
            _ if resumed => {}
            (suspend::ALL, _) => vm.let_go(None),
            (suspend::EVENT_THREAD, Some(thread)) => vm.let_go(Some(thread)),
            _ => {}
        }
        self.pending.extend(steps);
        Ok(self.pending.pop_front().unwrap_or(Step::Go))
    }

    /// A class of a probed file was prepared: its breakpoints are set.
    fn prepared(&mut self, at: usize, class: Id, signature: String) {
        let jvm = &mut self.jvms[at];
        if jvm.bound.contains(&class) {
            return;
        }
        jvm.bound.push(class);
        jvm.vm.know_signature(class, signature.clone());
        let source = jvm.vm.source_file(class).unwrap_or_default();
        if let Some(tracer) = self.tracers.get_mut(&jvm.conn) {
            for (index, traced) in self.plan.calls.iter().enumerate() {
                let of_file = |f: &File| f.path == traced.real_file && f.has(&source, &signature);
                if self.files.iter().any(of_file) {
                    tracer.watch(&mut jvm.vm, class, index);
                }
            }
        }
        if self.capped {
            return;
        }
        let watched = self.plan.watched();
        for (index, &(line, file)) in self.probes.iter().enumerate() {
            let file = &mut self.files[file];
            if !file.has(&source, &signature) {
                continue;
            }
            file.loaded = true;
            let Some((locations, best)) = places(&mut jvm.vm, class, line) else { continue };
            for location in &locations {
                let only = jvm.vm.out().u8(7).location(location).bytes;
                if let Ok(request) =
                    jvm.vm.set_event(kind::BREAKPOINT, suspend::EVENT_THREAD, &[only])
                {
                    jvm.breakpoints.insert(request, index);
                    let probe = &watched[index];
                    let plain = probe.condition.is_none() && !self.plan.include_stack;
                    let expression = probe.expression.as_deref().filter(|_| plain);
                    // One primitive local: the connection's reader reads it at each hit.
                    if let Some(slot) = quick_slot(&mut jvm.vm, location, expression) {
                        jvm.vm.client.reflex(|reflex| reflex.reads.insert(request, slot));
                    }
                }
            }
            let resolved = &mut self.resolved[index];
            if resolved.is_none_or(|r| best < r) {
                *resolved = Some(best);
            }
        }
    }

    /// A probe's hit, read in the stopped thread. `alone`: nothing else of its event needs
    /// the thread held: a primitive local is then read as the thread is let go (`*resumed`).
    fn hit(
        &mut self,
        at: usize,
        probe: usize,
        (thread, location): (Id, Location),
        alone: bool,
        read: Option<Receiver<super::Reply>>,
        resumed: &mut bool,
    ) -> Result<Option<Hit>, Failure> {
        // The reader's reflex read the local and let the thread go already.
        *resumed |= read.is_some();
        if self.capped {
            return Ok(None);
        }
        let watched = self.plan.watched();
        let Some(probe_plan) = watched.get(probe) else { return Ok(None) };
        let jvm = &mut self.jvms[at];
        if let Some(reply) = read {
            let result = shown_local(jvm, super::wait(&reply, super::REPLY_WAIT));
            return Ok(Some(self.hit_of(at, probe, result, None)));
        }
        let Ok(frame) = jvm.vm.top_frame(thread) else { return Ok(None) };
        let frame = Frame { thread, frame, depth: 0, at: location };
        let quick = alone && probe_plan.condition.is_none() && !self.plan.include_stack;
        let expression = probe_plan.expression.as_deref();
        if let Some(result) = quick.then(|| quick_local(jvm, frame, expression)).flatten() {
            *resumed = true;
            return Ok(Some(self.hit_of(at, probe, result, None)));
        }
        if let Some(condition) = &probe_plan.condition {
            let held = eval::evaluate(&mut jvm.vm, &mut jvm.values, frame, condition, 100);
            if held["value"] != Json::Bool(true) {
                return Ok(None);
            }
        }
        let result = match &probe_plan.expression {
            Some(expression) if !expression.trim().is_empty() => {
                eval::evaluate(&mut jvm.vm, &mut jvm.values, frame, expression, limits::VALUE_CHARS)
            }
            _ => json!({"locals": self.jvms[at].locals_of(frame)}),
        };
        let stack = self.plan.include_stack.then(|| self.stack(at, thread, STACK_FRAMES));
        Ok(Some(self.hit_of(at, probe, result, stack)))
    }

    fn hit_of(&mut self, at: usize, probe: usize, result: Json, stack: Option<Vec<Json>>) -> Hit {
        let jvm = &mut self.jvms[at];
        jvm.hits += 1;
        let truncated = result["truncated"] == true;
        let hit = Hit {
            result: result.to_string(),
            truncated,
            stack,
            from: Some(format!("\"pid\":{}", jvm.pid)),
        };
        match self.plan.probes.is_empty() {
            true => hit,
            false => hit.of_probe(probe),
        }
    }

    /// `[{function, file, line}]` of a stopped thread's top frames.
    fn stack(&mut self, at: usize, thread: Id, max: usize) -> Vec<Json> {
        let frames = self.jvms[at].vm.frames(thread, 0, max).unwrap_or_default();
        frames
            .iter()
            .map(|(_, location)| {
                let function = self.jvms[at].function(location);
                let line = self.jvms[at].vm.line_of(location);
                let file = self.jvms[at].own_file(&self.roots, location.class);
                let file = file.or_else(|| self.jvms[at].vm.source_file(location.class));
                json!({"function": function, "file": file, "line": line})
            })
            .collect()
    }

    /// An exception thrown: a failure when nothing catches it, or when a test framework does
    /// (a failing test), with the program's own frames on the stack.
    fn exception(
        &mut self,
        at: usize,
        thread: Id,
        _location: Location,
        exception: &Value,
        catch: Location,
    ) -> Option<Json> {
        let mut frames = None;
        let kind = match self.jvms[at].uncaught(catch) {
            true => "uncaught",
            false => match handled(&mut self.jvms[at], thread, catch, &mut frames) {
                Some(true) => "test",
                // Caught by a library (a web framework answering 500): with
                // `userUnhandled`, when it leaves the program's own code.
                None if self.plan.user_unhandled => "userUnhandled",
                _ => return None,
            },
        };
        let frames = match frames {
            Some(frames) => frames,
            None => self.jvms[at].vm.all_frames(thread).ok()?,
        };
        if kind == "userUnhandled" && !self.jvms[at].leaves_own_code(&self.roots, &frames, catch) {
            return None;
        }
        let mut own = Vec::new();
        for (index, (frame, location)) in frames.iter().enumerate() {
            if let Some(file) = self.jvms[at].own_file(&self.roots, location.class) {
                own.push((index, *frame, *location, file));
            }
        }
        if own.is_empty() && kind == "test" {
            return None;
        }
        let jvm = &mut self.jvms[at];
        let Value::Object(_, id) = *exception else { return None };
        let class = jvm.vm.type_of(id).ok()?;
        let kind_type = vm::class_name(&jvm.vm.signature(class));
        // `getMessage()`, which JUnit 4's `ComparisonFailure` makes of its expected and actual.
        let said = super::values::find_method(&mut jvm.vm, class, "getMessage", 0)
            .filter(|_| !jvm.values.no_calls)
            .and_then(|(_, method)| jvm.vm.invoke(thread, id, class, method.id, &[]).ok());
        let message = match said {
            Some(super::vm::Invoked::Returned(Value::Object(_, m))) if m != 0 => {
                jvm.vm.string(m).unwrap_or_default()
            }
            _ => jvm.vm.string_field(id, "detailMessage"),
        };
        let mut listed = Vec::new();
        for (depth, frame, location, file) in own.iter().take(limits::FAILURE_FRAMES) {
            let function = self.jvms[at].function(location);
            let line = self.jvms[at].vm.line_of(location);
            let mut frame = Frame { thread, frame: *frame, depth: *depth, at: *location };
            // A preview that ran `toString()` ended the ids of the frames read before it.
            frame.refresh(&self.jvms[at].vm);
            let locals = self.jvms[at].locals_of(frame);
            listed
                .push(json!({"function": function, "file": file, "line": line, "locals": locals}));
        }
        // None of the program's own (a library's thread, sources not found): where it was
        // thrown, marked as a library's, so the throwing method is named.
        if own.is_empty() {
            for (_, location) in frames.iter().take(LIBRARY_FRAMES) {
                let function = self.jvms[at].function(location);
                let file = self.jvms[at].vm.source_file(location.class);
                let line = self.jvms[at].vm.line_of(location);
                listed.push(
                    json!({"function": function, "file": file, "line": line, "library": true}),
                );
            }
        }
        let mut record = crate::debugger::script::failure_record(
            kind,
            &kind_type,
            &message,
            listed,
            frames.len(),
        );
        // The test: the method a runner called by reflection on this thread's stack, or on
        // another's (an exception of a thread the test started).
        let test = match test_method(&mut self.jvms[at], thread, &frames) {
            Some(test) => Some(test),
            None if kind == "test" => {
                own.last().map(|(_, _, location, _)| self.jvms[at].function(location))
            }
            None => self.running_test(at, thread),
        };
        if let Some(test) = test {
            record["test"] = test.into();
        }
        record["process"] = self.jvms[at].pid.into();
        Some(record)
    }

    /// The test another thread of the JVM is running, read with that thread held a moment.
    fn running_test(&mut self, at: usize, except: Id) -> Option<String> {
        let jvm = &mut self.jvms[at];
        for thread in jvm.vm.all_threads().into_iter().filter(|t| *t != except) {
            if jvm.vm.suspend_thread(thread).is_err() {
                continue;
            }
            let frames = jvm.vm.all_frames(thread).unwrap_or_default();
            let test = test_method(jvm, thread, &frames);
            let _ = jvm.vm.resume_thread(thread);
            if test.is_some() {
                return test;
            }
        }
        None
    }

    /// The calls traced in JVM `at`, with what reads them (`None`: no `calls`).
    fn traced(&mut self, at: usize) -> Option<super::calls::Traced<'_>> {
        let jvm = &mut self.jvms[at];
        let tracer = self.tracers.get_mut(&jvm.conn)?;
        Some(super::calls::Traced { jvm, tracer, roots: &self.roots })
    }

    fn ended(&self) -> Step {
        match self.top_exited && self.pending.is_empty() && self.jvms.iter().all(|j| j.ended) {
            true => Step::Finished,
            false => Step::Go,
        }
    }
}

/// The slot and tag of the primitive local a probe's `expression` names where `at` is, when
/// the expression is that local alone: it can be read as its thread is let go.
fn quick_slot(vm: &mut Vm, at: &Location, expression: Option<&str>) -> Option<(i32, u8)> {
    let name = expression?.trim();
    if name.is_empty() || !name.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '$') {
        return None;
    }
    let variables = vm.variables(at.class, at.method)?;
    let variable = variables.iter().find(|v| v.name == name && v.live_at(at.index))?;
    if !matches!(variable.signature.as_str(), "Z" | "B" | "C" | "S" | "I" | "J" | "F" | "D") {
        return None;
    }
    Some((variable.slot, vm::tag_of(&variable.signature)))
}

/// `{type, value}` of a probe that names a local of a primitive type, read as the thread is
/// let go ([`Vm::values_then_go`]); `None` where that cannot be (the thread is still held).
fn quick_local(jvm: &mut Jvm, frame: Frame, expression: Option<&str>) -> Option<Json> {
    if !jvm.vm.guesses_hold() {
        return None;
    }
    let slot = quick_slot(&mut jvm.vm, &frame.at, expression)?;
    let values = jvm.vm.values_then_go(frame.thread, frame.frame, &[slot]);
    Some(shown_local(jvm, values))
}

/// `{type, value}` of a local read as its thread was let go (by [`quick_local`], or by the
/// connection's reader): the reply's values, or why the frame could not be read.
fn shown_local(jvm: &mut Jvm, read: Result<Vec<u8>, super::Error>) -> Json {
    let value = match read {
        Ok(reply) => jvm.vm.values_in(&reply).into_iter().next().unwrap_or(Value::Void),
        Err(e) => {
            if e == super::Error::Vm(vm::INVALID_FRAMEID) {
                jvm.vm.guess_refused();
            }
            return json!({"type": "error", "value": format!("the frame could not be read: {e}")});
        }
    };
    let mut show =
        Show { vm: &mut jvm.vm, values: &mut jvm.values, thread: 0, budget: 100, truncated: false };
    show.typed(&value)
}

/// The method a test runner called by reflection (the test), among a thread's frames: the
/// outermost frame whose caller is `Method.invoke`'s machinery.
fn test_method(jvm: &mut Jvm, thread: Id, frames: &[(Id, Location)]) -> Option<String> {
    let reflective = |jvm: &mut Jvm, at: &Location| jvm.reflective(at.class);
    let index = (0..frames.len().saturating_sub(1))
        .rev()
        .find(|&i| !reflective(jvm, &frames[i].1) && reflective(jvm, &frames[i + 1].1))?;
    let at = frames[index].1;
    if is_library(&jvm.vm.signature(at.class)) {
        return None;
    }
    // Named by the test's class, as the runner reports it: a test inherited from an
    // abstract case runs, and fails, once for each class that extends it.
    let method = jvm.vm.method(at.class, at.method)?.name;
    let frame = jvm.vm.frames(thread, index, 1).ok()?.first()?.0;
    let class = match jvm.vm.this_object(thread, frame) {
        Ok(Value::Object(_, this)) if this != 0 => jvm.vm.type_of(this).unwrap_or(at.class),
        _ => at.class,
    };
    Some(format!("{}.{method}", vm::short_name(&jvm.vm.signature(class))))
}

/// What a test framework makes of an exception to be caught at `catch` (`test_catcher`).
/// Caught by `Method.invoke` (since Java 18 it catches what the method throws to wrap it), it
/// is the caller's to handle: a runner throws it on unwrapped, to a statement that expects it
/// (JUnit 4's `@Test(expected)`) when one stands further out. `frames`: the thread's, once
/// read.
fn handled(
    jvm: &mut Jvm,
    thread: Id,
    catch: Location,
    frames: &mut Option<Vec<(Id, Location)>>,
) -> Option<bool> {
    if !jvm.reflective(catch.class) {
        return test_catcher(&jvm.vm.signature(catch.class));
    }
    let Ok(all) = jvm.vm.all_frames(thread) else {
        return test_catcher(&jvm.vm.signature(catch.class));
    };
    let all = frames.insert(all);
    let caller = jvm.past_reflection(all, catch);
    let verdict = test_catcher(&jvm.vm.signature(caller.class));
    let outer = all.iter().skip_while(|(_, at)| *at != caller);
    let expects = outer
        .map(|(_, at)| at.class)
        .any(|class| test_catcher(&jvm.vm.signature(class)) == Some(false));
    match verdict {
        Some(true) if expects => Some(false),
        verdict => verdict,
    }
}

/// Whether a class that catches an exception is a test framework's: `Some(true)` when it
/// fails a test there, `Some(false)` when it expected it (`assertThrows`, `@Test(expected)`).
fn test_catcher(signature: &str) -> Option<bool> {
    const EXPECTING: &[&str] = &[
        "Lorg/junit/jupiter/api/AssertThrows",
        "Lorg/junit/jupiter/api/AssertThrowsExactly",
        "Lorg/junit/Assert;",
        "Lorg/junit/internal/runners/statements/ExpectException;",
        "Lorg/junit/rules/ExpectedException",
        "Lorg/assertj/",
    ];
    const RUNNERS: &[&str] = &["Lorg/junit/", "Ljunit/", "Lorg/testng/"];
    if EXPECTING.iter().any(|p| signature.starts_with(p)) {
        return Some(false);
    }
    RUNNERS.iter().any(|p| signature.starts_with(p)).then_some(true)
}

impl Collector for Run<'_> {
    type Event = Incoming;

    fn inputs(&self) -> Inputs<Incoming> {
        Inputs {
            events: self.incoming.clone(),
            exited: self.exited.clone(),
            tick: match self.pending.is_empty() {
                true => crossbeam_channel::never(),
                false => crossbeam_channel::after(std::time::Duration::ZERO),
            },
            more: crossbeam_channel::never(),
        }
    }

    fn handle(&mut self, input: Input<Incoming>) -> Result<Step, Failure> {
        match input {
            // Held at its start (`suspend=y`): its `VM_START` lets it go once its requests
            // are set.
            Input::Event(Incoming::Connected { conn, client, peer }) => {
                self.connected(conn, client, peer)
            }
            Input::Event(Incoming::Packet(packet)) => self.packet(packet),
            Input::Exited(exit) => {
                self.exited = crossbeam_channel::never();
                self.top_exited = true;
                if let Some(exit) = exit {
                    self.debuggee.record_exit(exit);
                }
                Ok(match self.ended() {
                    Step::Finished => Step::Finished,
                    _ => Step::Draining,
                })
            }
            Input::Tick => Ok(self.pending.pop_front().unwrap_or_else(|| self.ended())),
            Input::Closed => Ok(Step::Go),
        }
    }

    fn stop_hits(&mut self) {
        self.capped = true;
        for jvm in &mut self.jvms {
            jvm.vm.client.reflex(|reflex| reflex.reads.clear());
            for request in jvm.breakpoints.keys() {
                jvm.vm.clear_event(kind::BREAKPOINT, *request);
            }
        }
    }

    fn end(&mut self, timed_out: bool) -> Exit {
        self.debuggee.end_run(timed_out)
    }

    fn abort(&mut self) {
        self.debuggee.kill();
        self.jvms.clear();
    }

    fn output(&self) -> Json {
        self.debuggee.output().to_json()
    }

    fn stopped(&self) -> Vec<crate::process::Stopped> {
        self.debuggee.stopped()
    }

    fn undebugged(&self) -> Undebugged {
        let followed: Vec<u32> = self.jvms.iter().map(|j| j.pid).collect();
        Undebugged::of(&self.debuggee, &followed)
    }

    fn processes(&self) -> Vec<Json> {
        crate::debugger::script::listed(
            self.debuggee.pid(),
            self.jvms.iter().map(|j| Debugged {
                pid: j.pid,
                command: &j.command,
                parent: j.parent,
                hits: Some(j.hits),
                threads: Vec::new(),
            }),
        )
    }

    fn resolution(&mut self) -> (Option<u32>, Option<String>, Vec<Json>) {
        (self.resolved.first().copied().flatten(), None, Vec::new())
    }

    fn probe_lines(&self) -> Vec<Option<u32>> {
        self.resolved.clone()
    }

    fn no_code(&self) -> Option<String> {
        let (index, (line, file)) = self
            .probes
            .iter()
            .enumerate()
            .find(|(i, (_, f))| self.resolved[*i].is_none() && self.files[*f].loaded)?;
        let which = match self.plan.probes.is_empty() {
            true => String::new(),
            false => format!("probe {index}: "),
        };
        Some(format!(
            "{which}{} holds no code at line {line} in the classes loaded from it (a comment, a \
             blank line, a declaration without a value?): choose a line with a statement",
            self.files[*file].path.display()
        ))
    }

    fn never_bound(&self) -> String {
        match self.jvms.is_empty() {
            true => "no JVM of the command started (is it `java`, or does it start one? JAVA_TOOL_OPTIONS must reach it)".to_string(),
            false => format!(
                "no class of {} was loaded by the program's JVMs (is it compiled into what the command runs, with its source file name? javac writes it by default)",
                self.plan.file.display()
            ),
        }
    }

    fn calls(&mut self, calls: &mut crate::debugger::calls::Calls) {
        for jvm in &self.jvms {
            if let Some(tracer) = self.tracers.get_mut(&jvm.conn) {
                let counted = jvm.vm.client.reflex(|reflex| std::mem::take(&mut reflex.counts));
                tracer.hand(jvm.pid, counted.unwrap_or_default(), calls);
            }
        }
    }

    fn hang(&mut self, calls: &mut crate::debugger::calls::Calls) -> Vec<Json> {
        self.calls(calls);
        let roots = self.roots.clone();
        let mut threads = Vec::new();
        for jvm in self.jvms.iter_mut().filter(|j| !j.ended) {
            threads.extend(super::hang::threads(jvm, &roots));
        }
        threads
    }

    fn activity(&self) -> u64 {
        self.debuggee.output().written() + self.jvms.len() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_frameworks_catch_failures_and_expected_exceptions() {
        assert_eq!(
            test_catcher("Lorg/junit/platform/engine/support/hierarchical/ThrowableCollector;"),
            Some(true)
        );
        assert_eq!(test_catcher("Lorg/junit/jupiter/api/AssertThrows;"), Some(false));
        assert_eq!(test_catcher("Lapp/Main;"), None);
    }
}
