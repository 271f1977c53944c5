//! `calls` on the JVM: the JVM's own method entry and exit events, asked for each class of a
//! traced file as it is prepared (`ClassOnly`), the thread held at an entry to read the
//! arguments (the frame's parameters); an exit holds nothing: the value returned comes with
//! it. JDWP says nothing of a method an exception leaves: at each exception thrown in a thread
//! with traced calls running, the thread's frames above the one that catches it are the
//! calls it ends. Past the cap, calls are only counted, no thread held. No method of the
//! program runs to show a value here (a traced method called to show one would stop in
//! itself): objects are read by their fields, the JDK's collections by their contents.

use std::collections::HashMap;

use serde_json::{json, Map, Value as Json};

use super::values::Show;
use super::vm::{self, Method};
use super::wire::{Id, Location, Value};
use super::{kind, suspend};
use crate::debugger::calls::Calls;
use crate::debugger::limits::LOCAL_PREVIEW;

/// The traced calls of one JVM.
#[derive(Default)]
pub(super) struct Tracer {
    /// The functions asked for by name, per `calls` entry (`None`: all of its file's methods).
    only: Vec<Option<String>>,
    calls: Calls,
    cap: usize,
    next: u64,
    /// Per thread, the traced calls running, innermost last.
    open: HashMap<Id, Vec<Open>>,
    /// Entry and exit requests, to the `calls` entry each stands for.
    requests: HashMap<i32, usize>,
    /// The entry requests, with their class: re-made holding no thread once the cap is
    /// reached (`counting`), when calls are only counted.
    entries: Vec<(i32, Id)>,
    /// The exit requests, cleared once counting and no recorded call runs.
    exits: Vec<i32>,
    /// Past the cap: the counting breakpoints, to the function each counts.
    counters: HashMap<i32, String>,
    counting: bool,
}

struct Open {
    method: Id,
    /// `None`: past the cap, counted when it ends.
    record: Option<Json>,
    function: String,
}

impl Tracer {
    /// A tracer of the functions asked for (`only`, per `calls` entry), recording `cap`.
    pub(super) fn new(only: Vec<Option<String>>, cap: usize) -> Tracer {
        Tracer { only, cap, ..Tracer::default() }
    }

    /// Asks for the entries and exits of a class of traced file `file`.
    /// Entries hold their thread (to read the arguments) until the cap is reached; exits never
    /// do: the value returned comes with the event.
    pub(super) fn watch(&mut self, vm: &mut vm::Vm, class: Id, file: usize) {
        if self.counting {
            self.count_calls(vm, class, file);
            if self.open.values().all(Vec::is_empty) {
                return;
            }
        }
        let only = vm.out().u8(4).class(class).bytes;
        if !self.counting {
            let entry = vm.set_event(
                kind::METHOD_ENTRY,
                suspend::EVENT_THREAD,
                std::slice::from_ref(&only),
            );
            if let Ok(request) = entry {
                self.requests.insert(request, file);
                self.entries.push((request, class));
            }
        }
        let exit = kind::METHOD_EXIT_WITH_RETURN_VALUE;
        if let Ok(request) = vm.set_event(exit, suspend::NONE, &[only]) {
            self.requests.insert(request, file);
            self.exits.push(request);
        }
    }

    /// The cap is reached: calls from now on are counted, no thread held, by a breakpoint at
    /// each traced method's first instruction (a method entry event makes the JVM run the
    /// thread interpreted, and costs twice a breakpoint's: 10,000 took 0.33 s against 0.20 s).
    fn count_only(&mut self, vm: &mut vm::Vm) {
        self.counting = true;
        for (request, class) in std::mem::take(&mut self.entries) {
            let Some(file) = self.requests.remove(&request) else { continue };
            vm.clear_event(kind::METHOD_ENTRY, request);
            self.count_calls(vm, class, file);
        }
    }

    /// Counting breakpoints on the traced methods of a class (one whose code jumps back to
    /// its first instruction, a loop that opens it, is not counted: each turn would count).
    fn count_calls(&mut self, vm: &mut vm::Vm, class: Id, file: usize) {
        let class_name = vm::short_name(&vm.signature(class));
        for method in vm.methods(class) {
            if !self.traced_in(file, &method) || method.modifiers & 0x0500 != 0 {
                continue;
            }
            let Some(code) = vm.bytecodes(class, method.id) else { continue };
            if code.is_empty() || jumps_to_start(&code) {
                continue;
            }
            let start = Location { tag: 1, class, method: method.id, index: 0 };
            let only = vm.out().u8(7).location(&start).bytes;
            if let Ok(request) = vm.set_event(kind::BREAKPOINT, suspend::NONE, &[only]) {
                self.counters.insert(request, format!("{class_name}.{}", method.name));
                // Counted by the connection's reader, without waking the run.
                vm.client.reflex(|reflex| reflex.counts.insert(request, 0));
            }
        }
    }

    /// A counting breakpoint's hit: a call past the cap. False when `request` is not one.
    pub(super) fn counted(&mut self, request: i32) -> bool {
        let Some(function) = self.counters.get(&request) else { return false };
        self.calls.omit(function, 1);
        true
    }

    /// Asks for every exception thrown, holding its thread: the calls it ends are read from
    /// the thread's frames ([`Traced::thrown`]).
    pub(super) fn watch_throws(vm: &vm::Vm) {
        let only = vm.out().u8(8).class(0).bool(true).bool(true).bytes;
        let _ = vm.set_event(kind::EXCEPTION, suspend::EVENT_THREAD, &[only]);
    }

    /// Whether a method is one `calls` records: the program's own, by the name asked.
    fn traced(&self, request: i32, method: &Method) -> bool {
        self.requests.get(&request).is_some_and(|&file| self.traced_in(file, method))
    }

    /// Whether `calls` entry `file` asks for `method`.
    fn traced_in(&self, file: usize, method: &Method) -> bool {
        if method.modifiers & 0x1000 != 0 || method.name == "<clinit>" {
            return false;
        }
        match self.only.get(file) {
            Some(Some(name)) => &method.name == name,
            _ => true,
        }
    }
}

/// The JVM of a traced call, with what reads it.
pub(super) struct Traced<'a> {
    pub(super) jvm: &'a mut super::program::Jvm,
    pub(super) tracer: &'a mut Tracer,
    pub(super) roots: &'a super::program::Roots,
}

impl Traced<'_> {
    /// A traced method was entered (the thread is held): its record opens, with its arguments.
    pub(super) fn entered(&mut self, request: i32, thread: Id, at: Location) {
        let Some(method) = self.jvm.vm.method(at.class, at.method) else { return };
        let tracer = &mut *self.tracer;
        if !tracer.traced(request, &method) {
            return;
        }
        let function = self.jvm.function(&at);
        let tracer = &mut *self.tracer;
        if tracer.counting {
            tracer.calls.omit(&function, 1);
            return;
        }
        let running: usize = tracer.open.values().map(Vec::len).sum();
        let open = tracer.open.entry(thread).or_default();
        let depth = open.len();
        let parent = open.iter().rev().find_map(|o| o.record.as_ref().map(|r| r["call"].clone()));
        if tracer.calls.len() + running >= tracer.cap {
            tracer.calls.omit(&function, 1);
            tracer.count_only(&mut self.jvm.vm);
            return;
        }
        tracer.next += 1;
        let call = tracer.next;
        let file = self.jvm.own_file(self.roots, at.class);
        let line = self
            .jvm
            .vm
            .lines(at.class, at.method)
            .and_then(|l| l.entries.iter().map(|e| e.1).min());
        let args = self.arguments(thread, at, &method);
        let mut record = json!({"call": call, "function": function, "file": file, "line": line,
                                "depth": depth, "args": args});
        if let Some(parent) = parent {
            record["parent"] = parent;
        }
        let tracer = &mut *self.tracer;
        tracer.open.entry(thread).or_default().push(Open {
            method: at.method,
            record: Some(record),
            function,
        });
    }

    /// A traced method was left: its record closes with the value returned or what it threw.
    pub(super) fn exited(&mut self, request: i32, thread: Id, at: Location, value: &Value) {
        let tracer = &mut *self.tracer;
        if !tracer.requests.contains_key(&request) {
            return;
        }
        if tracer.counting && tracer.open.values().all(Vec::is_empty) {
            // Nothing recorded is running: exits are of no use any more.
            for request in std::mem::take(&mut tracer.exits) {
                self.jvm.vm.clear_event(kind::METHOD_EXIT_WITH_RETURN_VALUE, request);
            }
            return;
        }
        let Some(open) = tracer.open.get_mut(&thread) else { return };
        let Some(index) = open.iter().rposition(|o| o.method == at.method) else { return };
        // Calls above it ended unseen (popped frames): closed as they are.
        let mut ended: Vec<Open> = open.drain(index..).collect();
        let this = ended.remove(0);
        let cap = tracer.cap;
        for unseen in ended {
            if let Some(record) = unseen.record {
                tracer.calls.record(0, record, cap);
            }
        }
        let Some(mut record) = this.record else {
            tracer.calls.omit(&this.function, 1);
            return;
        };
        let is_void =
            self.jvm.vm.method(at.class, at.method).is_some_and(|m| m.signature.ends_with(")V"));
        if !is_void {
            record["return"] = self.show().preview(value).into();
        }
        let tracer = &mut *self.tracer;
        tracer.calls.record(0, record, cap);
    }

    /// An exception was thrown in `thread` (held), to be caught at `catch` (none: nowhere):
    /// the traced calls running in the frames above the catching one end by it.
    pub(super) fn thrown(&mut self, thread: Id, exception: &Value, catch: Location) {
        let tracer = &mut *self.tracer;
        if tracer.open.get(&thread).is_none_or(Vec::is_empty) {
            return;
        }
        let Ok(frames) = self.jvm.vm.all_frames(thread) else { return };
        let catcher = match catch.is_none() {
            true => frames.len(),
            false => frames
                .iter()
                .position(|(_, at)| at.class == catch.class && at.method == catch.method)
                .unwrap_or(0),
        };
        let above = &frames[..catcher];
        let tracer = &mut *self.tracer;
        let open = tracer.open.get_mut(&thread).expect("calls running");
        // The running calls, innermost first, matched to the frames above, top first.
        let mut from = 0;
        let mut ending = 0;
        for call in open.iter().rev() {
            match above[from..].iter().position(|(_, at)| at.method == call.method) {
                Some(found) => {
                    from += found + 1;
                    ending += 1;
                }
                None => break,
            }
        }
        let ended: Vec<Open> = open.drain(open.len() - ending..).collect();
        if ended.is_empty() {
            return;
        }
        let threw = match exception {
            Value::Object(_, id) if *id != 0 => self.exception(*id),
            _ => json!({}),
        };
        let tracer = &mut *self.tracer;
        let cap = tracer.cap;
        for call in ended.into_iter().rev() {
            if let Some(mut record) = call.record {
                record["threw"] = threw.clone();
                tracer.calls.record(0, record, cap);
            }
        }
    }

    fn show(&mut self) -> Show<'_> {
        Show {
            vm: &mut self.jvm.vm,
            values: &mut self.jvm.values,
            thread: 0,
            budget: LOCAL_PREVIEW * 2,
            truncated: false,
        }
    }

    /// `{type, message}` of an exception, read by its fields.
    fn exception(&mut self, id: Id) -> Json {
        let (kind, message) = self.jvm.vm.thrown(id);
        json!({"type": kind, "message": crate::debugger::limits::clip(&message, LOCAL_PREVIEW)})
    }

    /// The arguments of the method entered, `{name: preview}`: by the names the class was
    /// compiled with, else `arg0`, `arg1`… from its signature.
    fn arguments(&mut self, thread: Id, at: Location, method: &Method) -> Json {
        let Ok(frame) = self.jvm.vm.top_frame(thread) else { return json!({}) };
        let types = vm::argument_types(&method.signature);
        let first = usize::from(!method.is_static());
        let mut slots = Vec::with_capacity(types.len());
        let mut slot = first as i32;
        for ty in &types {
            slots.push((slot, vm::tag_of(ty)));
            slot += if matches!(*ty, "J" | "D") { 2 } else { 1 };
        }
        let names: Vec<String> = match self.jvm.vm.variables(at.class, at.method) {
            Some(variables) => slots
                .iter()
                .enumerate()
                .map(|(i, (slot, _))| {
                    let named = variables.iter().find(|v| v.slot == *slot && v.start == 0);
                    named.map_or_else(|| format!("arg{i}"), |v| v.name.clone())
                })
                .collect(),
            None => (0..slots.len()).map(|i| format!("arg{i}")).collect(),
        };
        let values = self.jvm.vm.frame_values(thread, frame, &slots).unwrap_or_default();
        let mut args = Map::new();
        // Synthetic parameters (an inner class's `this$0`, a captured `val$x`) left out.
        for (name, value) in names.into_iter().zip(values).filter(|(n, _)| !n.contains('$')) {
            let mut show = self.show();
            args.insert(name, show.preview(&value).into());
        }
        Json::Object(args)
    }
}

/// Whether a method's code jumps back to its first instruction (a loop that opens it).
fn jumps_to_start(code: &[u8]) -> bool {
    let (mut at, end) = (0usize, code.len());
    let i16_at = |i: usize| code.get(i..i + 2).map(|b| i16::from_be_bytes([b[0], b[1]]) as isize);
    let i32_at = |i: usize| {
        code.get(i..i + 4).map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]) as isize)
    };
    while at < end {
        let op = code[at];
        let here = at as isize;
        let targets_start = |offset: Option<isize>| offset.is_some_and(|o| here + o == 0);
        let length = match op {
            0x99..=0xa8 | 0xc6 | 0xc7 => {
                if targets_start(i16_at(at + 1)) {
                    return true;
                }
                3
            }
            0xc8 | 0xc9 => {
                if targets_start(i32_at(at + 1)) {
                    return true;
                }
                5
            }
            0xaa | 0xab => {
                let base = (at + 4) & !3;
                let targets: Vec<usize> = match op {
                    0xaa => {
                        let (low, high) =
                            (i32_at(base + 4).unwrap_or(0), i32_at(base + 8).unwrap_or(-1));
                        let n = (high - low + 1).max(0) as usize;
                        std::iter::once(base).chain((0..n).map(|k| base + 12 + k * 4)).collect()
                    }
                    _ => {
                        let n = i32_at(base + 4).unwrap_or(0).max(0) as usize;
                        std::iter::once(base).chain((0..n).map(|k| base + 12 + k * 8)).collect()
                    }
                };
                if targets.iter().any(|&t| targets_start(i32_at(t))) {
                    return true;
                }
                match op {
                    0xaa => targets.last().map_or(end, |t| t + 4) - at,
                    _ => base + 8 + (targets.len() - 1) * 8 - at,
                }
            }
            0x10 | 0x12 | 0x15..=0x19 | 0x36..=0x3a | 0xa9 | 0xbc => 2,
            0x11 | 0x13 | 0x14 | 0x84 | 0xb2..=0xb8 | 0xbb | 0xbd | 0xc0 | 0xc1 => 3,
            0xc5 => 4,
            0xb9 | 0xba => 5,
            0xc4 => match code.get(at + 1) {
                Some(0x84) => 6,
                _ => 4,
            },
            _ => 1,
        };
        at += length.max(1);
    }
    false
}

impl Tracer {
    /// The calls recorded and those still running (without a return) to the run's, with
    /// those the counting breakpoints counted (`counted`, by request).
    pub(super) fn hand(&mut self, pid: u32, counted: HashMap<i32, u64>, calls: &mut Calls) {
        for (request, hits) in counted.into_iter().filter(|(_, hits)| *hits > 0) {
            if let Some(function) = self.counters.get(&request) {
                self.calls.omit(function, hits);
            }
        }
        let mut mine = std::mem::take(&mut self.calls);
        for (_, open) in self.open.drain() {
            for call in open.into_iter().filter_map(|o| o.record) {
                mine.record(0, call, self.cap);
            }
        }
        calls.absorb(pid, mine, self.cap);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_loop_that_opens_a_method_is_found_in_its_code() {
        // iload_0; ifle +5; iinc 0 -1; goto -6 (back to 0); return
        assert!(jumps_to_start(&[
            0x1a, 0x9e, 0x00, 0x09, 0x84, 0x00, 0xff, 0xa7, 0xff, 0xf9, 0xb1
        ]));
        // lload_0; iload_2; i2l; ladd; lreturn (Loop.step's shape): no jump.
        assert!(!jumps_to_start(&[0x1e, 0x1c, 0x85, 0x61, 0xad]));
        // iconst_0; lookupswitch (padded to 4) default +0x1c, 1 pair (1 -> +0x1c); a jump
        // ahead only.
        let mut code = vec![0x03, 0xab, 0, 0];
        code.extend_from_slice(&[0, 0, 0, 0x1c, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0x1c]);
        code.extend(std::iter::repeat_n(0x00, 12));
        code.push(0xb1);
        assert!(!jumps_to_start(&code));
    }
}
