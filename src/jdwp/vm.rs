//! A JVM as a debugger reads it: classes and their source files, methods, line and variable
//! tables, threads and frames, objects' fields, strings and arrays, method calls in a stopped
//! thread. What never changes for a class (its signature, methods, fields, tables) is asked
//! once and kept.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::wire::{tag, Id, IdSizes, In, Location, Out, Value};
use super::{cmd, error, Client, Error};

/// A method of a class.
#[derive(Debug, Clone)]
pub(crate) struct Method {
    pub(crate) id: Id,
    pub(crate) name: String,
    /// JNI form: `(ILjava/lang/String;)V`.
    pub(crate) signature: String,
    pub(crate) modifiers: i32,
}

impl Method {
    pub(crate) fn is_static(&self) -> bool {
        self.modifiers & 0x0008 != 0
    }

    /// How many arguments it takes, from its signature.
    pub(crate) fn arity(&self) -> usize {
        argument_types(&self.signature).len()
    }
}

/// A field of a class.
#[derive(Debug, Clone)]
pub(crate) struct Field {
    pub(crate) id: Id,
    pub(crate) name: String,
    pub(crate) signature: String,
    pub(crate) modifiers: i32,
}

impl Field {
    pub(crate) fn is_static(&self) -> bool {
        self.modifiers & 0x0008 != 0
    }

    /// Synthetic (`this$0`, `val$x`) or a compiler's own.
    pub(crate) fn is_synthetic(&self) -> bool {
        self.modifiers & 0x1000 != 0 || self.name.contains('$')
    }
}

/// A method's lines: each entry's first code index and line, in code order.
#[derive(Debug, Clone, Default)]
pub(crate) struct Lines {
    pub(crate) entries: Vec<(u64, i32)>,
}

impl Lines {
    /// The line of code index `index`.
    pub(crate) fn line_at(&self, index: u64) -> Option<i32> {
        self.entries.iter().take_while(|(at, _)| *at <= index).last().map(|(_, line)| *line)
    }
}

/// A local variable: where it is live, its name, type and slot.
#[derive(Debug, Clone)]
pub(crate) struct Variable {
    pub(crate) start: u64,
    pub(crate) length: u64,
    pub(crate) name: String,
    pub(crate) signature: String,
    pub(crate) slot: i32,
}

impl Variable {
    pub(crate) fn live_at(&self, index: u64) -> bool {
        self.start <= index && index < self.start + self.length
    }
}

/// A thread's state as the VM says it (`ThreadReference.Status`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum ThreadStatus {
    Zombie,
    Running,
    Sleeping,
    Monitor,
    Wait,
    Unknown,
}

/// The VM of one connection.
pub(crate) struct Vm {
    pub(crate) client: Client,
    pub(crate) sizes: IdSizes,
    signatures: HashMap<Id, String>,
    sources: HashMap<Id, Option<String>>,
    methods: HashMap<Id, Vec<Method>>,
    fields: HashMap<Id, Vec<Field>>,
    supers: HashMap<Id, Id>,
    interfaces: HashMap<Id, Vec<Id>>,
    lines: HashMap<(Id, Id), Option<Lines>>,
    variables: HashMap<(Id, Id), Option<Vec<Variable>>>,
    types: HashMap<Id, Id>,
    frames: Arc<Mutex<FrameGuesses>>,
}

/// The id of a thread's top frame, known without asking where the VM numbers frames as
/// HotSpot does (the thread's resume count above 16 bits, the depth below: 0x20000, 0x30000
/// for two stops in a row): a hit then costs one request less. A guess the VM refuses
/// (`INVALID_FRAMEID`) is read and the request made again, so a VM that numbers them
/// otherwise is only slower.
#[derive(Default)]
pub(crate) struct FrameGuesses {
    /// Per thread: its top frame's id when last read, and how often it was resumed since.
    top: HashMap<Id, (Id, u64)>,
    /// Guesses found wrong, to the id read instead.
    corrected: HashMap<Id, (Id, Id)>,
    /// A guess was wrong once: no more guessing in this VM.
    off: bool,
    /// The last guess made, and whether one was ever taken by the VM.
    issued: Option<Id>,
    confirmed: bool,
}

impl FrameGuesses {
    /// The id of `thread`'s top frame now, where the VM's numbering is known (`None`: it is
    /// to be read).
    pub(crate) fn guess(&mut self, thread: Id) -> Option<Id> {
        let &(id, resumes) = self.top.get(&thread).filter(|_| !self.off)?;
        if id & 0xFFFF != 0 || id >> 16 == 0 {
            return None;
        }
        let guess = id + (resumes << 16);
        self.corrected.remove(&guess);
        self.issued = Some(guess);
        Some(guess)
    }

    /// Whether this VM took a guessed frame id, and none was refused.
    pub(crate) fn hold(&self) -> bool {
        self.confirmed && !self.off
    }

    /// A guess was refused: no more guessing in this VM.
    pub(crate) fn refused(&mut self) {
        self.off = true;
    }

    /// `thread` (`None`: every thread) was let go once more.
    pub(crate) fn resumed(&mut self, thread: Option<Id>) {
        match thread {
            Some(thread) => {
                if let Some(top) = self.top.get_mut(&thread) {
                    top.1 += 1;
                }
            }
            None => self.top.clear(),
        }
    }
}

pub(crate) const INVALID_FRAMEID: u16 = 30;

/// A method call's answer: its value, or the exception it threw.
pub(crate) enum Invoked {
    Returned(Value),
    Threw(Value),
}

/// How long a method invoked in the program may run.
pub(crate) const INVOKE_WAIT: Duration = Duration::from_secs(3);

impl Vm {
    /// The VM on a connection that shook hands: asks its id sizes first.
    pub(crate) fn new(client: Client) -> Result<Vm, Error> {
        let reply = client.request(cmd::VM_ID_SIZES, &[])?;
        let default = IdSizes::default();
        let mut read = In::new(&reply, &default);
        let mut size = || usize::try_from(read.i32()).ok().filter(|n| (1..=8).contains(n));
        let sizes = match (size(), size(), size(), size(), size()) {
            (Some(field), Some(method), Some(object), Some(reference_type), Some(frame)) => {
                IdSizes { field, method, object, reference_type, frame }
            }
            _ => return Err(Error::Vm(error::ABSENT_INFORMATION)),
        };
        let frames: Arc<Mutex<FrameGuesses>> = Arc::default();
        client.start_reflex(sizes, frames.clone());
        Ok(Vm {
            client,
            sizes,
            signatures: HashMap::new(),
            sources: HashMap::new(),
            methods: HashMap::new(),
            fields: HashMap::new(),
            supers: HashMap::new(),
            interfaces: HashMap::new(),
            lines: HashMap::new(),
            variables: HashMap::new(),
            types: HashMap::new(),
            frames,
        })
    }

    pub(crate) fn out(&self) -> Out<'_> {
        Out::new(&self.sizes)
    }

    fn ask(&self, command: (u8, u8), out: Out<'_>) -> Result<Vec<u8>, Error> {
        self.client.request(command, &out.bytes)
    }

    /// A suspended thread's top frame: guessed when the VM's numbering allows, else read.
    pub(crate) fn top_frame(&self, thread: Id) -> Result<Id, Error> {
        if let Some(guess) = self.guesses().guess(thread) {
            return Ok(guess);
        }
        let frames = self.frames(thread, 0, 1)?;
        frames.first().map(|f| f.0).ok_or(Error::Vm(INVALID_FRAMEID))
    }

    fn guesses(&self) -> std::sync::MutexGuard<'_, FrameGuesses> {
        self.frames.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A guessed frame id was refused: no more guessing in this VM.
    pub(crate) fn guess_refused(&self) {
        self.guesses().refused();
    }

    /// A frame request, made again with the frame read when a guessed id was refused.
    fn ask_frame(
        &self,
        command: (u8, u8),
        thread: Id,
        frame: Id,
        rest: impl Fn(Out<'_>) -> Out<'_>,
    ) -> Result<Vec<u8>, Error> {
        let corrected = self.guesses().corrected.get(&frame).filter(|c| c.0 == thread).map(|c| c.1);
        let first = corrected.unwrap_or(frame);
        match self.ask(command, rest(self.out().object(thread).frame(first))) {
            Err(Error::Vm(INVALID_FRAMEID)) if corrected.is_none() && frame & 0xFFFF == 0 => {
                let read = self.frames(thread, 0, 1)?.first().map(|f| f.0);
                let read = read.ok_or(Error::Vm(INVALID_FRAMEID))?;
                let mut guesses = self.guesses();
                guesses.refused();
                guesses.corrected.insert(frame, (thread, read));
                drop(guesses);
                self.ask(command, rest(self.out().object(thread).frame(read)))
            }
            answer => {
                if answer.is_ok() {
                    let mut guesses = self.guesses();
                    guesses.confirmed |= guesses.issued == Some(frame);
                }
                answer
            }
        }
    }

    /// Whether this VM took a guessed frame id: then a frame's values can be asked for and
    /// the thread let go in one write ([`Vm::values_then_go`]).
    pub(crate) fn guesses_hold(&self) -> bool {
        self.guesses().hold()
    }

    /// A frame's slot values read and its thread let go without waiting in between: the VM
    /// takes commands in order, so the read runs while the thread is still held. Only where
    /// nothing else needs the thread held (primitive values) and the frame id is known good.
    /// The read's reply ([`Vm::values_in`] lists its values).
    pub(crate) fn values_then_go(
        &self,
        thread: Id,
        frame: Id,
        slots: &[(i32, u8)],
    ) -> Result<Vec<u8>, Error> {
        self.resumed(Some(thread));
        let reply = self.client.read_then_go(&self.sizes, thread, frame, slots);
        super::wait(&reply, super::REPLY_WAIT)
    }

    /// The tagged values a reply lists (`StackFrame.GetValues`, `ObjectReference.GetValues`).
    pub(crate) fn values_in(&self, reply: &[u8]) -> Vec<Value> {
        let mut read = In::new(reply, &self.sizes);
        let n = read.count();
        (0..n).map(|_| read.value()).collect()
    }

    /// Counts a resume of `thread` (`None`: of every thread) against the frame guesses.
    fn resumed(&self, thread: Option<Id>) {
        self.guesses().resumed(thread);
    }

    /// Resumes a thread (`None`: every thread) without waiting for the reply.
    pub(crate) fn let_go(&self, thread: Option<Id>) {
        self.resumed(thread);
        match thread {
            Some(thread) => {
                drop(self.client.send(cmd::THREAD_RESUME, &self.out().object(thread).bytes))
            }
            None => drop(self.client.send(cmd::VM_RESUME, &[])),
        }
    }

    pub(crate) fn suspend_all(&self) -> Result<(), Error> {
        self.guesses().top.clear();
        self.ask(cmd::VM_SUSPEND, self.out()).map(drop)
    }

    pub(crate) fn resume_thread(&self, thread: Id) -> Result<(), Error> {
        self.resumed(Some(thread));
        self.ask(cmd::THREAD_RESUME, self.out().object(thread)).map(drop)
    }

    pub(crate) fn suspend_thread(&self, thread: Id) -> Result<(), Error> {
        self.ask(cmd::THREAD_SUSPEND, self.out().object(thread)).map(drop)
    }

    /// Lets go of the VM (an attached one): its requests cleared, its threads resumed.
    pub(crate) fn dispose(&self) {
        let _ = self.client.request(cmd::VM_DISPOSE, &[]);
    }

    /// Asks for events of `kind` (with `modifiers`, already written); answers the request's id.
    pub(crate) fn set_event(
        &self,
        kind: u8,
        policy: u8,
        modifiers: &[Vec<u8>],
    ) -> Result<i32, Error> {
        let mut out = self.out().u8(kind).u8(policy).i32(modifiers.len() as i32);
        for modifier in modifiers {
            out.bytes.extend_from_slice(modifier);
        }
        let reply = self.ask(cmd::EVENT_SET, out)?;
        Ok(In::new(&reply, &self.sizes).i32())
    }

    pub(crate) fn clear_event(&self, kind: u8, request: i32) {
        let _ = self.ask(cmd::EVENT_CLEAR, self.out().u8(kind).i32(request));
    }

    /// The loaded classes of a JNI signature (`Lapp/Orders;`).
    pub(crate) fn classes_by_signature(&self, signature: &str) -> Result<Vec<Id>, Error> {
        let reply = self.ask(cmd::VM_CLASSES_BY_SIGNATURE, self.out().string(signature))?;
        let mut read = In::new(&reply, &self.sizes);
        let n = read.count();
        let mut classes = Vec::with_capacity(n);
        for _ in 0..n {
            let _tag = read.u8();
            classes.push(read.class());
            let _status = read.i32();
        }
        Ok(classes)
    }

    /// Every loaded class: its id and signature (kept as known).
    pub(crate) fn all_classes(&mut self) -> Vec<(Id, String)> {
        let Ok(reply) = self.ask(cmd::VM_ALL_CLASSES, self.out()) else { return Vec::new() };
        let mut read = In::new(&reply, &self.sizes);
        let n = read.count();
        let mut classes = Vec::with_capacity(n);
        for _ in 0..n {
            let _tag = read.u8();
            let class = read.class();
            let signature = read.string();
            let _status = read.i32();
            self.signatures.insert(class, signature.clone());
            classes.push((class, signature));
        }
        classes
    }

    pub(crate) fn signature(&mut self, class: Id) -> String {
        if let Some(known) = self.signatures.get(&class) {
            return known.clone();
        }
        let signature = self
            .ask(cmd::TYPE_SIGNATURE, self.out().class(class))
            .map(|reply| In::new(&reply, &self.sizes).string())
            .unwrap_or_default();
        self.signatures.insert(class, signature.clone());
        signature
    }

    /// Records a class's signature known from an event (`CLASS_PREPARE`).
    pub(crate) fn know_signature(&mut self, class: Id, signature: String) {
        self.signatures.insert(class, signature);
    }

    /// The class's source file name (`Orders.java`), when compiled with it.
    pub(crate) fn source_file(&mut self, class: Id) -> Option<String> {
        if let Some(known) = self.sources.get(&class) {
            return known.clone();
        }
        let source = self
            .ask(cmd::TYPE_SOURCE_FILE, self.out().class(class))
            .ok()
            .map(|reply| In::new(&reply, &self.sizes).string());
        self.sources.insert(class, source.clone());
        source
    }

    pub(crate) fn methods(&mut self, class: Id) -> Vec<Method> {
        if let Some(known) = self.methods.get(&class) {
            return known.clone();
        }
        let mut methods = Vec::new();
        if let Ok(reply) = self.ask(cmd::TYPE_METHODS, self.out().class(class)) {
            let mut read = In::new(&reply, &self.sizes);
            for _ in 0..read.count() {
                let id = read.method();
                let (name, signature, modifiers) = (read.string(), read.string(), read.i32());
                methods.push(Method { id, name, signature, modifiers });
            }
        }
        self.methods.insert(class, methods.clone());
        methods
    }

    pub(crate) fn method(&mut self, class: Id, method: Id) -> Option<Method> {
        self.methods(class).into_iter().find(|m| m.id == method)
    }

    /// The fields the class declares (not its superclasses').
    pub(crate) fn fields(&mut self, class: Id) -> Vec<Field> {
        if let Some(known) = self.fields.get(&class) {
            return known.clone();
        }
        let mut fields = Vec::new();
        if let Ok(reply) = self.ask(cmd::TYPE_FIELDS, self.out().class(class)) {
            let mut read = In::new(&reply, &self.sizes);
            for _ in 0..read.count() {
                let id = read.field();
                let (name, signature, modifiers) = (read.string(), read.string(), read.i32());
                fields.push(Field { id, name, signature, modifiers });
            }
        }
        self.fields.insert(class, fields.clone());
        fields
    }

    /// The superclass (0 for `Object` and interfaces).
    pub(crate) fn superclass(&mut self, class: Id) -> Id {
        if let Some(&known) = self.supers.get(&class) {
            return known;
        }
        let superclass = self
            .ask(cmd::CLASS_SUPERCLASS, self.out().class(class))
            .map(|reply| In::new(&reply, &self.sizes).class())
            .unwrap_or(0);
        self.supers.insert(class, superclass);
        superclass
    }

    /// The class and its superclasses, nearest first.
    pub(crate) fn lineage(&mut self, class: Id) -> Vec<Id> {
        let mut chain = vec![class];
        let mut at = class;
        while chain.len() < 64 {
            at = self.superclass(at);
            if at == 0 {
                break;
            }
            chain.push(at);
        }
        chain
    }

    pub(crate) fn interfaces(&mut self, class: Id) -> Vec<Id> {
        if let Some(known) = self.interfaces.get(&class) {
            return known.clone();
        }
        let mut interfaces = Vec::new();
        if let Ok(reply) = self.ask(cmd::TYPE_INTERFACES, self.out().class(class)) {
            let mut read = In::new(&reply, &self.sizes);
            for _ in 0..read.count() {
                interfaces.push(read.class());
            }
        }
        self.interfaces.insert(class, interfaces.clone());
        interfaces
    }

    /// Whether the class is, extends or implements the type of `signature`.
    pub(crate) fn is_a(&mut self, class: Id, signature: &str) -> bool {
        let mut seen = Vec::new();
        let mut todo = self.lineage(class);
        while let Some(at) = todo.pop() {
            if seen.contains(&at) || seen.len() > 256 {
                continue;
            }
            seen.push(at);
            if self.signature(at) == signature {
                return true;
            }
            todo.extend(self.interfaces(at));
        }
        false
    }

    pub(crate) fn lines(&mut self, class: Id, method: Id) -> Option<Lines> {
        if let Some(known) = self.lines.get(&(class, method)) {
            return known.clone();
        }
        let lines = self
            .ask(cmd::METHOD_LINE_TABLE, self.out().class(class).method(method))
            .ok()
            .map(|reply| {
                let mut read = In::new(&reply, &self.sizes);
                let (_start, _end) = (read.u64(), read.u64());
                let n = read.count();
                let mut entries: Vec<(u64, i32)> =
                    (0..n).map(|_| (read.u64(), read.i32())).collect();
                entries.sort_by_key(|(index, _)| *index);
                Lines { entries }
            });
        self.lines.insert((class, method), lines.clone());
        lines
    }

    /// A method's bytecodes.
    pub(crate) fn bytecodes(&self, class: Id, method: Id) -> Option<Vec<u8>> {
        let reply = self.ask(cmd::METHOD_BYTECODES, self.out().class(class).method(method)).ok()?;
        let mut read = In::new(&reply, &self.sizes);
        let n = read.count();
        let code: Vec<u8> = (0..n).map(|_| read.u8()).collect();
        read.ok().then_some(code)
    }

    /// The line a location is on.
    pub(crate) fn line_of(&mut self, at: &Location) -> Option<i32> {
        self.lines(at.class, at.method)?.line_at(at.index)
    }

    /// The method's local variables; `None` when it was compiled without them (`javac`
    /// without `-g`).
    pub(crate) fn variables(&mut self, class: Id, method: Id) -> Option<Vec<Variable>> {
        if let Some(known) = self.variables.get(&(class, method)) {
            return known.clone();
        }
        let variables = self
            .ask(cmd::METHOD_VARIABLE_TABLE, self.out().class(class).method(method))
            .ok()
            .map(|reply| {
                let mut read = In::new(&reply, &self.sizes);
                let (_arguments, n) = (read.i32(), read.count());
                (0..n)
                    .map(|_| Variable {
                        start: read.u64(),
                        name: read.string(),
                        signature: read.string(),
                        length: read.i32() as u32 as u64,
                        slot: read.i32(),
                    })
                    .collect::<Vec<_>>()
            });
        self.variables.insert((class, method), variables.clone());
        variables
    }

    /// Up to `max` frames of a suspended thread from `start`: each frame's id and location.
    pub(crate) fn frames(
        &self,
        thread: Id,
        start: usize,
        max: usize,
    ) -> Result<Vec<(Id, Location)>, Error> {
        let out = self.out().object(thread).i32(start as i32).i32(max as i32);
        let reply = self.ask(cmd::THREAD_FRAMES, out)?;
        let mut read = In::new(&reply, &self.sizes);
        let n = read.count();
        let frames: Vec<(Id, Location)> = (0..n).map(|_| (read.frame(), read.location())).collect();
        if let (0, Some(top)) = (start, frames.first()) {
            self.guesses().top.insert(thread, (top.0, 0));
        }
        Ok(frames)
    }

    /// Every frame of a suspended thread (`-1`: all).
    pub(crate) fn all_frames(&self, thread: Id) -> Result<Vec<(Id, Location)>, Error> {
        let out = self.out().object(thread).i32(0).i32(-1);
        let reply = self.ask(cmd::THREAD_FRAMES, out)?;
        let mut read = In::new(&reply, &self.sizes);
        let n = read.count();
        Ok((0..n).map(|_| (read.frame(), read.location())).collect())
    }

    /// The values of a frame's slots, each with the tag its variable's type gives.
    pub(crate) fn frame_values(
        &self,
        thread: Id,
        frame: Id,
        slots: &[(i32, u8)],
    ) -> Result<Vec<Value>, Error> {
        let reply = self.ask_frame(cmd::FRAME_GET_VALUES, thread, frame, |mut out| {
            out = out.i32(slots.len() as i32);
            for (slot, tag) in slots {
                out = out.i32(*slot).u8(*tag);
            }
            out
        })?;
        Ok(self.values_in(&reply))
    }

    /// Sets a frame's local in `slot` to `value`.
    pub(crate) fn set_frame_value(
        &self,
        thread: Id,
        frame: Id,
        slot: i32,
        value: &Value,
    ) -> Result<(), Error> {
        self.ask_frame(cmd::FRAME_SET_VALUES, thread, frame, |out| {
            out.i32(1).i32(slot).value(value)
        })
        .map(drop)
    }

    /// Sets a field of `object` to `value`; of `class` (a static field) when `object` is 0.
    pub(crate) fn set_field(
        &self,
        object: Id,
        class: Id,
        field: Id,
        value: &Value,
    ) -> Result<(), Error> {
        let (command, out) = match object {
            0 => (cmd::CLASS_SET_VALUES, self.out().class(class)),
            _ => (cmd::OBJECT_SET_VALUES, self.out().object(object)),
        };
        self.ask(command, out.i32(1).field(field).untagged(value)).map(drop)
    }

    /// Keeps an object from being collected (a watched one), or (`keep` false) no more.
    pub(crate) fn keep(&self, object: Id, keep: bool) {
        let command = match keep {
            true => cmd::OBJECT_DISABLE_COLLECTION,
            false => cmd::OBJECT_ENABLE_COLLECTION,
        };
        let _ = self.ask(command, self.out().object(object));
    }

    /// Sets an array's element `index` to `value`.
    pub(crate) fn set_element(&self, array: Id, index: usize, value: &Value) -> Result<(), Error> {
        let out = self.out().object(array).i32(index as i32).i32(1).untagged(value);
        self.ask(cmd::ARRAY_SET_VALUES, out).map(drop)
    }

    /// `this` in a frame (`null` in a static method).
    pub(crate) fn this_object(&self, thread: Id, frame: Id) -> Result<Value, Error> {
        let reply = self.ask_frame(cmd::FRAME_THIS, thread, frame, |out| out)?;
        Ok(In::new(&reply, &self.sizes).value())
    }

    /// The class of an object.
    pub(crate) fn type_of(&mut self, object: Id) -> Result<Id, Error> {
        if let Some(&known) = self.types.get(&object) {
            return Ok(known);
        }
        let reply = self.ask(cmd::OBJECT_REFERENCE_TYPE, self.out().object(object))?;
        let mut read = In::new(&reply, &self.sizes);
        let _tag = read.u8();
        let class = read.class();
        self.types.insert(object, class);
        Ok(class)
    }

    /// The values of an object's fields.
    pub(crate) fn object_values(&self, object: Id, fields: &[Id]) -> Result<Vec<Value>, Error> {
        let mut out = self.out().object(object).i32(fields.len() as i32);
        for field in fields {
            out = out.field(*field);
        }
        let reply = self.ask(cmd::OBJECT_GET_VALUES, out)?;
        Ok(self.values_in(&reply))
    }

    /// The values of a class's static fields.
    pub(crate) fn static_values(&self, class: Id, fields: &[Id]) -> Result<Vec<Value>, Error> {
        let mut out = self.out().class(class).i32(fields.len() as i32);
        for field in fields {
            out = out.field(*field);
        }
        let reply = self.ask(cmd::TYPE_GET_VALUES, out)?;
        Ok(self.values_in(&reply))
    }

    /// The field named `name` of the class or a superclass, and the class declaring it.
    pub(crate) fn find_field(&mut self, class: Id, name: &str) -> Option<(Id, Field)> {
        for at in self.lineage(class) {
            if let Some(field) = self.fields(at).into_iter().find(|f| f.name == name) {
                return Some((at, field));
            }
        }
        None
    }

    /// One field's value of an object, by name.
    pub(crate) fn field_value(&mut self, object: Id, name: &str) -> Option<Value> {
        let class = self.type_of(object).ok()?;
        let (_, field) = self.find_field(class, name)?;
        self.object_values(object, &[field.id]).ok()?.into_iter().next()
    }

    /// A field of an object that holds a String (`""` when it is null or unread).
    pub(crate) fn string_field(&mut self, object: Id, name: &str) -> String {
        match self.field_value(object, name) {
            Some(Value::Object(_, text)) if text != 0 => self.string(text).unwrap_or_default(),
            _ => String::new(),
        }
    }

    /// An exception's class as Java names it, and its message as its fields hold it.
    pub(crate) fn thrown(&mut self, exception: Id) -> (String, String) {
        let class = self.type_of(exception).map(|c| class_name(&self.signature(c)));
        (class.unwrap_or_default(), self.string_field(exception, "detailMessage"))
    }

    pub(crate) fn string(&self, object: Id) -> Result<String, Error> {
        let reply = self.ask(cmd::STRING_VALUE, self.out().object(object))?;
        Ok(In::new(&reply, &self.sizes).string())
    }

    /// A string made in the VM (an argument of a method call).
    pub(crate) fn create_string(&self, text: &str) -> Result<Value, Error> {
        let reply = self.ask(cmd::VM_CREATE_STRING, self.out().string(text))?;
        Ok(Value::Object(tag::STRING, In::new(&reply, &self.sizes).object()))
    }

    pub(crate) fn array_length(&self, array: Id) -> Result<usize, Error> {
        let reply = self.ask(cmd::ARRAY_LENGTH, self.out().object(array))?;
        Ok(In::new(&reply, &self.sizes).i32().max(0) as usize)
    }

    /// `count` elements of an array from `first`.
    pub(crate) fn array_values(
        &self,
        array: Id,
        first: usize,
        count: usize,
    ) -> Result<Vec<Value>, Error> {
        let out = self.out().object(array).i32(first as i32).i32(count as i32);
        let reply = self.ask(cmd::ARRAY_GET_VALUES, out)?;
        let mut read = In::new(&reply, &self.sizes);
        let element = read.u8();
        let n = read.count();
        let primitive = !matches!(element, b'L' | b's' | b'[' | b't' | b'g' | b'l' | b'c');
        Ok((0..n)
            .map(|_| match primitive {
                true => read.untagged(element),
                false => read.value(),
            })
            .collect())
    }

    pub(crate) fn thread_name(&self, thread: Id) -> String {
        self.ask(cmd::THREAD_NAME, self.out().object(thread))
            .map(|reply| In::new(&reply, &self.sizes).string())
            .unwrap_or_default()
    }

    /// The name of a thread's group (`main`, `system`).
    pub(crate) fn thread_group_name(&self, thread: Id) -> Option<String> {
        let reply = self.ask(cmd::THREAD_GROUP, self.out().object(thread)).ok()?;
        let group = In::new(&reply, &self.sizes).object();
        let reply = self.ask(cmd::GROUP_NAME, self.out().object(group)).ok()?;
        Some(In::new(&reply, &self.sizes).string())
    }

    pub(crate) fn thread_status(&self, thread: Id) -> ThreadStatus {
        let Ok(reply) = self.ask(cmd::THREAD_STATUS, self.out().object(thread)) else {
            return ThreadStatus::Unknown;
        };
        match In::new(&reply, &self.sizes).i32() {
            0 => ThreadStatus::Zombie,
            1 => ThreadStatus::Running,
            2 => ThreadStatus::Sleeping,
            3 => ThreadStatus::Monitor,
            4 => ThreadStatus::Wait,
            _ => ThreadStatus::Unknown,
        }
    }

    pub(crate) fn all_threads(&self) -> Vec<Id> {
        let Ok(reply) = self.ask(cmd::VM_ALL_THREADS, self.out()) else { return Vec::new() };
        let mut read = In::new(&reply, &self.sizes);
        let n = read.count();
        (0..n).map(|_| read.object()).collect()
    }

    /// The monitor a thread waits to enter, or waits on (`Object.wait`); 0 for none.
    pub(crate) fn contended_monitor(&self, thread: Id) -> Id {
        self.ask(cmd::THREAD_CONTENDED_MONITOR, self.out().object(thread))
            .map(|reply| match In::new(&reply, &self.sizes).value() {
                Value::Object(_, id) => id,
                _ => 0,
            })
            .unwrap_or(0)
    }

    /// The thread owning a monitor (0 for none).
    pub(crate) fn monitor_owner(&self, object: Id) -> Id {
        self.ask(cmd::OBJECT_MONITOR_INFO, self.out().object(object))
            .map(|reply| In::new(&reply, &self.sizes).object())
            .unwrap_or(0)
    }

    /// Calls a method in a suspended thread, the other threads held (`INVOKE_SINGLE_THREADED`);
    /// on `object`, or static on `class` when `object` is 0.
    pub(crate) fn invoke(
        &self,
        thread: Id,
        object: Id,
        class: Id,
        method: Id,
        arguments: &[Value],
    ) -> Result<Invoked, Error> {
        let mut out = match object {
            0 => self.out().class(class).object(thread).method(method),
            _ => self.out().object(object).object(thread).class(class).method(method),
        };
        out = out.i32(arguments.len() as i32);
        for argument in arguments {
            out = out.value(argument);
        }
        out = out.i32(0x01);
        let command = if object == 0 { cmd::CLASS_INVOKE } else { cmd::OBJECT_INVOKE };
        // The thread ran: its frames are numbered anew.
        self.guesses().top.remove(&thread);
        let reply = super::wait(&self.client.send(command, &out.bytes), INVOKE_WAIT)?;
        let mut read = In::new(&reply, &self.sizes);
        let returned = read.value();
        let thrown = read.value();
        Ok(match thrown {
            Value::Object(_, id) if id != 0 => Invoked::Threw(thrown),
            _ => Invoked::Returned(returned),
        })
    }
}

/// The JNI signatures of a method signature's arguments: `(I[JLa/B;)V` → `I`, `[J`, `La/B;`.
pub(crate) fn argument_types(signature: &str) -> Vec<&str> {
    let inner = signature.strip_prefix('(').and_then(|s| s.split(')').next()).unwrap_or("");
    let mut types = Vec::new();
    let bytes = inner.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let start = i;
        while i < bytes.len() && bytes[i] == b'[' {
            i += 1;
        }
        if i < bytes.len() && bytes[i] == b'L' {
            while i < bytes.len() && bytes[i] != b';' {
                i += 1;
            }
        }
        i += 1;
        types.push(&inner[start..i.min(inner.len())]);
    }
    types
}

/// The value tag of a JNI type signature's values.
pub(crate) fn tag_of(signature: &str) -> u8 {
    match signature.as_bytes().first() {
        Some(b'L') if signature == "Ljava/lang/String;" => tag::STRING,
        Some(b'L') if signature == "Ljava/lang/Thread;" => tag::THREAD,
        Some(&b) => b,
        None => b'V',
    }
}

/// A JNI class signature as Java names the class: `Lapp/Orders$Item;` → `app.Orders$Item`,
/// `[I` → `int[]`.
pub(crate) fn class_name(signature: &str) -> String {
    let dims = signature.bytes().take_while(|&b| b == b'[').count();
    let element = &signature[dims..];
    let base = match element {
        "Z" => "boolean".to_string(),
        "B" => "byte".to_string(),
        "C" => "char".to_string(),
        "S" => "short".to_string(),
        "I" => "int".to_string(),
        "J" => "long".to_string(),
        "F" => "float".to_string(),
        "D" => "double".to_string(),
        "V" => "void".to_string(),
        _ => element
            .strip_prefix('L')
            .and_then(|s| s.strip_suffix(';'))
            .unwrap_or(element)
            .replace('/', "."),
    };
    format!("{base}{}", "[]".repeat(dims))
}

/// The name a type is shown by in answers: the class's own name without its package
/// (`Orders.Item` for `app.Orders$Item`, `int[]`, `ArrayList`).
pub(crate) fn short_name(signature: &str) -> String {
    let full = class_name(signature);
    let (base, dims) = match full.find('[') {
        Some(at) => full.split_at(at),
        None => (full.as_str(), ""),
    };
    // A hidden class (a lambda's, `Server$$Lambda$14.0x00007f…`): its name before the address.
    let base = base.rsplit_once(".0x").map_or(base, |(name, _)| name);
    let simple = base.rsplit('.').next().unwrap_or(base);
    // A lambda's class by its host's name: `Orders.Builder$$Lambda$5` (Java 17),
    // `Orders.Builder$$Lambda` (later Javas name it by its address alone).
    if let Some((host, lambda)) = simple.split_once("$$Lambda") {
        return format!("{}$$Lambda{lambda}{dims}", host.replace('$', "."));
    }
    // An inner class by its outer's name (`Orders.Item`); an anonymous one stays `Orders$1`.
    let shown = match simple.rsplit_once('$') {
        Some((_, inner)) if !inner.starts_with(|c: char| c.is_ascii_digit()) => {
            simple.replace('$', ".")
        }
        _ => simple.to_string(),
    };
    format!("{shown}{dims}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_read_as_java_names_them() {
        assert_eq!(
            argument_types("(I[JLa/B;[[Ljava/lang/String;Z)V"),
            ["I", "[J", "La/B;", "[[Ljava/lang/String;", "Z"]
        );
        assert!(argument_types("()V").is_empty());
        assert_eq!(class_name("Lapp/Orders$Item;"), "app.Orders$Item");
        assert_eq!(class_name("[[I"), "int[][]");
        assert_eq!(short_name("Lapp/Orders$Item;"), "Orders.Item");
        assert_eq!(short_name("Lapp/Orders$1;"), "Orders$1");
        assert_eq!(short_name("Lapp/Server$$Lambda$14.0x00007f32e0000a08;"), "Server$$Lambda$14");
        // Java 25 names it by its address alone; its host is an inner class here.
        let lambda = "Lorg/x/CommandLine$Builder$$Lambda.0x000001000012a4b0;";
        assert_eq!(short_name(lambda), "CommandLine.Builder$$Lambda");
        assert_eq!(short_name("[Ljava/lang/String;"), "String[]");
        assert_eq!(tag_of("Ljava/lang/String;"), b's');
        assert_eq!(tag_of("[I"), b'[');
    }
}
