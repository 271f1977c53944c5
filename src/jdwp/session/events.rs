//! What the JVMs of a session say: a JVM that connects (set up as the first one was, then let
//! start), a class prepared (breakpoints bound in it), a breakpoint's hit (a stop, a
//! logpoint's message, or nothing when its condition is false), a step's end, an exception, a
//! JVM that ended.

use serde_json::json;

use super::{Breakpoint, Java, Machine, Paused};
use crate::debugger::backend::Happening;
use crate::debugger::limits::VALUE_PREVIEW;
use crate::debugger::model::{Exception, Location, Reason, Stop, TraceFrame};
use crate::jdwp::eval::{self, Frame as At};
use crate::jdwp::program::{places, Jvm};
use crate::jdwp::wire::{Id, Location as Place, Value};
use crate::jdwp::{kind, parse_composite, suspend, Client, Event};
use crate::log;

impl Java {
    /// A JVM the program started later (surefire's fork, a test worker): debugged as the
    /// first one is, its breakpoints and exception stops set before it starts. One of an
    /// attached program is not ours: dropped.
    pub(super) fn adopt(
        &mut self,
        conn: usize,
        client: Client,
        peer: std::net::SocketAddr,
    ) -> Option<Happening<Paused>> {
        let Some((_, debuggee)) = &self.program else { return None };
        let others: Vec<u32> = self.machines.iter().map(|m| m.jvm.pid).collect();
        let jvm = match Jvm::connected(conn, client, peer, debuggee, &self.typed, &others) {
            Ok(jvm) => jvm,
            Err(e) => {
                log::warn(format_args!("a JVM of the program that did not answer: {e}"));
                return None;
            }
        };
        self.machines.push(Machine::new(jvm));
        let m = self.machines.len() - 1;
        let ids: Vec<String> = self.breakpoints.keys().cloned().collect();
        for id in ids {
            self.watch(m, &id);
        }
        if let Err(e) = self.catch_exceptions(m) {
            log::warn(format_args!("exception stops in a JVM of the program: {}", e.message()));
        }
        // What it said before it was taken: its `VM_START`, which holds it until now.
        let mut happened = None;
        for data in self.early.remove(&conn).unwrap_or_default() {
            happened = happened.or(self.received(m, data));
        }
        self.machines[m].jvm.vm.let_go(None);
        happened
    }

    /// A packet of JVM `m` (`None`: its connection closed).
    pub(super) fn received(
        &mut self,
        m: usize,
        data: Option<Vec<u8>>,
    ) -> Option<Happening<Paused>> {
        let Some(data) = data else {
            self.machines[m].jvm.ended = true;
            self.turns.forget(|at| at.0 == m);
            // An attached JVM that ended ends the session; a launched program ends when its
            // process does.
            return self.program.is_none().then_some(Happening::Ended(None));
        };
        let happening = self.packet(m, &data)?;
        self.turns.arrived(happening)
    }

    /// Breakpoint `id` in JVM `m`: its file's classes watched as they load, and bound in
    /// those already loaded.
    pub(super) fn watch(&mut self, m: usize, id: &str) {
        let Some(Breakpoint { file, .. }) = self.breakpoints.get(id) else { return };
        let machine = &mut self.machines[m];
        let vm = &mut machine.jvm.vm;
        if !machine.watching.contains_key(&file.name) {
            let only = file.source_match(vm);
            if let Ok(request) = vm.set_event(kind::CLASS_PREPARE, suspend::EVENT_THREAD, &[only]) {
                machine.watching.insert(file.name.clone(), request);
            }
        }
        // Only a class of the file's package is asked its source file (a request each).
        let candidates: Vec<(Id, String)> = vm
            .all_classes()
            .into_iter()
            .filter(|(_, signature)| file.in_package(signature))
            .collect();
        let loaded: Vec<Id> = (candidates.into_iter())
            .filter(|(class, signature)| {
                file.has(&vm.source_file(*class).unwrap_or_default(), signature)
            })
            .map(|(class, _)| class)
            .collect();
        for class in loaded {
            self.bind(m, id, class);
        }
    }

    /// Breakpoint `id` set in a class of its file, in JVM `m`.
    fn bind(&mut self, m: usize, id: &str, class: Id) {
        let Some(breakpoint) = self.breakpoints.get_mut(id) else { return };
        let machine = &mut self.machines[m];
        let Some((locations, line)) = places(&mut machine.jvm.vm, class, breakpoint.spec.line)
        else {
            return;
        };
        for location in &locations {
            let vm = &machine.jvm.vm;
            let only = vm.out().u8(7).location(location).bytes;
            if let Ok(request) = vm.set_event(kind::BREAKPOINT, suspend::ALL, &[only]) {
                machine.requests.insert(request, id.to_string());
            }
        }
        let place = json!({"file": breakpoint.spec.file.display().to_string(), "line": line});
        if !breakpoint.resolved.contains(&place) {
            breakpoint.resolved.push(place);
        }
    }

    /// A class was prepared in JVM `m`: the breakpoints of its file are bound in it.
    fn prepared(&mut self, m: usize, class: Id, signature: String) {
        let vm = &mut self.machines[m].jvm.vm;
        vm.know_signature(class, signature.clone());
        let source = vm.source_file(class).unwrap_or_default();
        let ids: Vec<String> = (self.breakpoints.iter())
            .filter(|(_, b)| b.file.has(&source, &signature))
            .map(|(id, _)| id.clone())
            .collect();
        for id in ids {
            self.bind(m, &id, class);
        }
    }

    /// Where a frame of JVM `m` is: the program's own file by its path, else the class's
    /// source file name.
    pub(super) fn location(&mut self, m: usize, place: &Place) -> Location {
        let jvm = &mut self.machines[m].jvm;
        let file =
            jvm.own_file(&self.roots, place.class).or_else(|| jvm.vm.source_file(place.class));
        Location {
            function: jvm.function(place),
            file,
            line: jvm.vm.line_of(place).unwrap_or(0).max(0) as u64,
            column: None,
            generated: None,
        }
    }

    /// The stop of `thread` of JVM `m` (held with the whole VM).
    pub(super) fn stop(
        &mut self,
        m: usize,
        thread: Id,
        reason: Reason,
        hits: Vec<String>,
        exception: Option<Exception>,
    ) -> Option<Stop<Paused>> {
        let frames = self.machines[m].jvm.vm.all_frames(thread).ok()?;
        let top = frames.first()?.1;
        let location = self.location(m, &top);
        let count = frames.len();
        let paused = Paused { jvm: m, thread, frames, reason, hits: hits.clone() };
        Some(Stop { reason, hits, location, exception, frames: count, paused })
    }

    /// An exception as a stop shows it.
    fn exception(&mut self, m: usize, thread: Id, exception: &Value, catch: Place) -> Exception {
        let id = match exception {
            Value::Object(_, id) => *id,
            _ => 0,
        };
        let jvm = &mut self.machines[m].jvm;
        let (class, message) = jvm.vm.thrown(id);
        let frames = jvm.vm.all_frames(thread).unwrap_or_default();
        let stack = frames
            .iter()
            .map(|(_, place)| {
                let own = jvm.own_file(&self.roots, place.class);
                TraceFrame {
                    function: jvm.function(place),
                    file: own
                        .clone()
                        .or_else(|| jvm.vm.source_file(place.class))
                        .unwrap_or_default(),
                    line: jvm.vm.line_of(place).map(|l| l.max(0) as u32),
                    library: own.is_none(),
                }
            })
            .collect();
        Exception {
            class: class.into(),
            message: message.into(),
            stack,
            uncaught: jvm.uncaught(catch),
            user_unhandled: false,
        }
    }

    /// A breakpoint's hit: a stop, a logpoint's message, or nothing (its condition is false).
    fn hit(
        &mut self,
        m: usize,
        request: i32,
        thread: Id,
        place: Place,
    ) -> Option<Happening<Paused>> {
        let id = self.machines[m].requests.get(&request)?.clone();
        let spec = self.breakpoints.get(&id)?.spec.clone();
        let jvm = &mut self.machines[m].jvm;
        let frames = jvm.vm.frames(thread, 0, 1).ok()?;
        let at = At { thread, frame: frames.first()?.0, depth: 0, at: place };
        if let Some(condition) = &spec.condition {
            let held = eval::evaluate(&mut jvm.vm, &mut jvm.values, at, condition, 100);
            // A condition that cannot be evaluated stops: its error is for the agent to see.
            if held["value"] == false && held["type"] == "boolean" {
                jvm.vm.let_go(None);
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
                        at.refresh(&jvm.vm);
                        let value =
                            eval::evaluate(&mut jvm.vm, &mut jvm.values, at, e, VALUE_PREVIEW);
                        match &value["value"] {
                            serde_json::Value::String(s) => text.push_str(s),
                            other => text.push_str(&crate::jdwp::values::text(other)),
                        }
                    }
                }
            }
            jvm.vm.let_go(None);
            return Some(Happening::Logpoint { breakpoint: Some(id), text: text.into() });
        }
        self.stop(m, thread, Reason::Breakpoint, vec![id], None).map(Happening::Stopped)
    }

    /// What one packet of JVM `m` meant.
    fn packet(&mut self, m: usize, data: &[u8]) -> Option<Happening<Paused>> {
        let (policy, events) = parse_composite(data, &self.machines[m].jvm.vm.sizes)?;
        let mut happened = None;
        let mut thread = None;
        // `VM_START` holds the JVM until its requests are set: whoever set them lets it go.
        let mut started = false;
        for event in events {
            thread = thread.or(event.thread());
            let now = match event {
                Event::VmStart { .. } => {
                    started = true;
                    None
                }
                Event::ClassPrepare { class, signature, .. } => {
                    self.prepared(m, class, signature);
                    None
                }
                Event::Breakpoint { request, thread, at } => match self.hit(m, request, thread, at)
                {
                    // The hit went on (a false condition, a logpoint): nothing else here holds.
                    None => return None,
                    Some(Happening::Logpoint { breakpoint, text }) => {
                        return Some(Happening::Logpoint { breakpoint, text })
                    }
                    stop => stop,
                },
                Event::MethodEntry { request, thread, .. }
                    if Some(request) == self.machines[m].entry =>
                {
                    self.machines[m].jvm.vm.clear_event(kind::METHOD_ENTRY, request);
                    self.machines[m].entry = None;
                    self.stop(m, thread, Reason::Entry, Vec::new(), None).map(Happening::Stopped)
                }
                Event::Field { request, thread, modified }
                    if self.machines[m].watches.contains_key(&request) =>
                {
                    match self.field_event(m, thread, modified) {
                        true => self.stop(m, thread, Reason::Watchpoint, Vec::new(), None),
                        false => None,
                    }
                    .map(Happening::Stopped)
                }
                Event::Step { request, thread, .. }
                    if Some(request) == self.machines[m].written =>
                {
                    self.machines[m].jvm.vm.clear_event(kind::SINGLE_STEP, request);
                    self.machines[m].written = None;
                    self.stop(m, thread, Reason::Watchpoint, Vec::new(), None)
                        .map(Happening::Stopped)
                }
                Event::Step { request, thread, .. } => {
                    self.machines[m].jvm.vm.clear_event(kind::SINGLE_STEP, request);
                    self.machines[m].step = None;
                    self.stop(m, thread, Reason::Step, Vec::new(), None).map(Happening::Stopped)
                }
                Event::Exception { request, thread, exception, catch, .. }
                    if Some(request) == self.machines[m].exceptions =>
                {
                    // `userUnhandled`: caught, but by a library the exception reached from
                    // the program's own code; else it goes on.
                    let jvm = &mut self.machines[m].jvm;
                    let frames = jvm.vm.all_frames(thread).unwrap_or_default();
                    let leaves = jvm.leaves_own_code(&self.roots, &frames, catch);
                    let user_unhandled = self.exceptions == "userUnhandled";
                    match !user_unhandled || catch.is_none() || leaves {
                        true => {
                            let mut exception = self.exception(m, thread, &exception, catch);
                            exception.user_unhandled = leaves;
                            let stop = self.stop(
                                m,
                                thread,
                                Reason::Exception,
                                Vec::new(),
                                Some(exception),
                            );
                            stop.map(Happening::Stopped)
                        }
                        false => None,
                    }
                }
                Event::VmDeath => {
                    let jvm = &mut self.machines[m].jvm;
                    jvm.ended = true;
                    jvm.vm.client.close();
                    None
                }
                _ => None,
            };
            happened = happened.or(now);
        }
        // A stop ends a step still pending in the JVM (one that a breakpoint came before).
        if let Some(Happening::Stopped(stop)) = &happened {
            let machine = &mut self.machines[m];
            if let Some(request) = machine.step.take().filter(|_| stop.reason != Reason::Step) {
                machine.jvm.vm.clear_event(kind::SINGLE_STEP, request);
            }
        }
        if happened.is_none() && !started {
            let vm = &self.machines[m].jvm.vm;
            match (policy, thread) {
                (suspend::ALL, _) => vm.let_go(None),
                (suspend::EVENT_THREAD, Some(thread)) => vm.let_go(Some(thread)),
                _ => {}
            }
        }
        happened
    }
}
