//! A JDWP client: the JVM's own debug wire protocol, spoken over the TCP connection a JVM
//! started with `-agentlib:jdwp` makes to us (`launch.rs`).
//!
//! After the 14-byte handshake, packets flow both ways: our commands and the VM's replies,
//! matched by id, and the VM's events (`Event.Composite`). A reader thread owns the socket's
//! input: it routes each reply to the request waiting for it and sends each event's bytes to
//! one channel in arrival order (they are parsed by whoever reads them, once the id sizes are
//! known: the first event, `VM_START`, comes before they can be asked). Requests are written by
//! the caller. When the connection ends every pending request fails at once and the event
//! channel closes.
//!
//! `vm.rs` is the VM as a debugger reads it (classes, lines, frames, values, with caches);
//! `script.rs` the `debug-script` collector.

pub(crate) mod calls;
pub(crate) mod contents;
pub(crate) mod eval;
pub(crate) mod expr;
pub(crate) mod hang;
pub(crate) mod launch;
pub(crate) mod program;
pub(crate) mod script;
pub(crate) mod session;
pub(crate) mod values;
pub(crate) mod vm;
pub(crate) mod wire;

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crossbeam_channel::{Receiver, Sender};

use crate::thread::JoinOnDrop;
use wire::{Id, IdSizes, In, Location, Value};

const HANDSHAKE: &[u8] = b"JDWP-Handshake";
/// How long a request waits for its reply (a method invoked in the program has its own limit).
pub(crate) const REPLY_WAIT: Duration = Duration::from_secs(10);

/// Command sets and commands used here (the JDWP specification's numbers).
pub(crate) mod cmd {
    pub(crate) const VM_CLASSES_BY_SIGNATURE: (u8, u8) = (1, 2);
    pub(crate) const VM_ALL_CLASSES: (u8, u8) = (1, 3);
    pub(crate) const VM_ALL_THREADS: (u8, u8) = (1, 4);
    pub(crate) const VM_DISPOSE: (u8, u8) = (1, 6);
    pub(crate) const VM_ID_SIZES: (u8, u8) = (1, 7);
    pub(crate) const VM_SUSPEND: (u8, u8) = (1, 8);
    pub(crate) const VM_RESUME: (u8, u8) = (1, 9);
    pub(crate) const VM_CREATE_STRING: (u8, u8) = (1, 11);
    pub(crate) const TYPE_SIGNATURE: (u8, u8) = (2, 1);
    pub(crate) const TYPE_FIELDS: (u8, u8) = (2, 4);
    pub(crate) const TYPE_METHODS: (u8, u8) = (2, 5);
    pub(crate) const TYPE_GET_VALUES: (u8, u8) = (2, 6);
    pub(crate) const TYPE_SOURCE_FILE: (u8, u8) = (2, 7);
    pub(crate) const TYPE_INTERFACES: (u8, u8) = (2, 10);
    pub(crate) const CLASS_SUPERCLASS: (u8, u8) = (3, 1);
    pub(crate) const CLASS_SET_VALUES: (u8, u8) = (3, 2);
    pub(crate) const CLASS_INVOKE: (u8, u8) = (3, 3);
    pub(crate) const METHOD_LINE_TABLE: (u8, u8) = (6, 1);
    pub(crate) const METHOD_BYTECODES: (u8, u8) = (6, 3);
    pub(crate) const METHOD_VARIABLE_TABLE: (u8, u8) = (6, 2);
    pub(crate) const OBJECT_REFERENCE_TYPE: (u8, u8) = (9, 1);
    pub(crate) const OBJECT_GET_VALUES: (u8, u8) = (9, 2);
    pub(crate) const OBJECT_SET_VALUES: (u8, u8) = (9, 3);
    pub(crate) const OBJECT_DISABLE_COLLECTION: (u8, u8) = (9, 7);
    pub(crate) const OBJECT_ENABLE_COLLECTION: (u8, u8) = (9, 8);
    pub(crate) const OBJECT_MONITOR_INFO: (u8, u8) = (9, 5);
    pub(crate) const OBJECT_INVOKE: (u8, u8) = (9, 6);
    pub(crate) const STRING_VALUE: (u8, u8) = (10, 1);
    pub(crate) const THREAD_NAME: (u8, u8) = (11, 1);
    pub(crate) const THREAD_SUSPEND: (u8, u8) = (11, 2);
    pub(crate) const THREAD_RESUME: (u8, u8) = (11, 3);
    pub(crate) const THREAD_STATUS: (u8, u8) = (11, 4);
    pub(crate) const THREAD_GROUP: (u8, u8) = (11, 5);
    pub(crate) const THREAD_FRAMES: (u8, u8) = (11, 6);
    pub(crate) const THREAD_CONTENDED_MONITOR: (u8, u8) = (11, 9);
    pub(crate) const GROUP_NAME: (u8, u8) = (12, 1);
    pub(crate) const ARRAY_LENGTH: (u8, u8) = (13, 1);
    pub(crate) const ARRAY_GET_VALUES: (u8, u8) = (13, 2);
    pub(crate) const ARRAY_SET_VALUES: (u8, u8) = (13, 3);
    pub(crate) const EVENT_SET: (u8, u8) = (15, 1);
    pub(crate) const EVENT_CLEAR: (u8, u8) = (15, 2);
    pub(crate) const FRAME_GET_VALUES: (u8, u8) = (16, 1);
    pub(crate) const FRAME_SET_VALUES: (u8, u8) = (16, 2);
    pub(crate) const FRAME_THIS: (u8, u8) = (16, 3);
}

/// JDWP's error codes that callers tell apart.
pub(crate) mod error {
    pub(crate) const ABSENT_INFORMATION: u16 = 101;
}

/// Why a request got no answer.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Error {
    /// The VM answered with an error code.
    Vm(u16),
    /// The connection ended (the VM exited).
    Gone,
    /// No reply within the wait.
    NoReply,
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Vm(code) => write!(f, "the JVM answered error {code} ({})", error_name(*code)),
            Error::Gone => write!(f, "the JVM's debug connection ended"),
            Error::NoReply => write!(f, "the JVM did not answer within {}s", REPLY_WAIT.as_secs()),
        }
    }
}

fn error_name(code: u16) -> &'static str {
    match code {
        10 => "INVALID_THREAD",
        13 => "THREAD_NOT_SUSPENDED",
        20 => "INVALID_OBJECT",
        21 => "INVALID_CLASS",
        23 => "INVALID_METHODID",
        30 => "INVALID_FRAMEID",
        34 => "INVALID_SLOT",
        35 => "DUPLICATE",
        41 => "NOT_FOUND",
        99 => "NOT_IMPLEMENTED",
        101 => "ABSENT_INFORMATION",
        102 => "INVALID_EVENT_TYPE",
        112 => "VM_DEAD",
        502 => "INVALID_LENGTH",
        _ => "see the JDWP specification",
    }
}

type Reply = Result<Vec<u8>, Error>;
type Pending = Arc<Mutex<HashMap<u32, Sender<Reply>>>>;

/// One connection to a JVM.
pub(crate) struct Client {
    outbox: Outbox,
    reflex: Arc<Mutex<Option<Reflex>>>,
    reader: Option<JoinOnDrop>,
}

/// What a connection's reader passes on: an `Event.Composite`'s data, or (`None`) the
/// connection's end; `conn` says which connection. `read`: the reader's reflex read the hit's
/// local and let its thread go (the reply of that read comes there).
#[derive(Debug)]
pub(crate) struct Packet {
    pub(crate) conn: usize,
    pub(crate) data: Option<Vec<u8>>,
    pub(crate) read: Option<Receiver<Reply>>,
}

/// What a connection's reader does at once, before the event reaches the run: at the hit of a
/// breakpoint whose probe reads one primitive local, it asks for the local in the thread's
/// top frame (its id guessed) and lets the thread go, in one write, then passes the hit on
/// with its value; a hit of a breakpoint that only counts (calls past `calls`' cap) is
/// counted and goes no further. The JVM runs on meanwhile, and the run wakes once a hit, or
/// not at all (10,000 hits: 2.34 s -> 2.20 s here).
pub(crate) struct Reflex {
    pub(crate) sizes: IdSizes,
    pub(crate) guesses: Arc<Mutex<vm::FrameGuesses>>,
    /// Breakpoint requests, to the slot and tag of the local each reads.
    pub(crate) reads: HashMap<i32, (i32, u8)>,
    /// Counting breakpoint requests (no thread held), to their hits so far.
    pub(crate) counts: HashMap<i32, u64>,
}

/// What the reflex did with an event.
enum Acted {
    /// Asked for a local and let the thread go: the read's request id and its reply.
    Read(u32, Receiver<Reply>),
    /// Counted its hits: nothing more to do.
    Counted,
}

impl Reflex {
    fn new(sizes: IdSizes, guesses: Arc<Mutex<vm::FrameGuesses>>) -> Reflex {
        Reflex { sizes, guesses, reads: HashMap::new(), counts: HashMap::new() }
    }

    /// Acts on an event composite when it is one hit of a breakpoint it reads, or hits of
    /// breakpoints that count.
    fn act(&mut self, data: &[u8], outbox: &Outbox) -> Option<Acted> {
        let sizes = self.sizes;
        let mut read = In::new(data, &sizes);
        let (policy, count) = (read.u8(), read.i32());
        if policy == suspend::NONE && !self.counts.is_empty() {
            return self.count(&mut read, count).then_some(Acted::Counted);
        }
        if policy != suspend::EVENT_THREAD || count != 1 || read.u8() != kind::BREAKPOINT {
            return None;
        }
        let &(slot, tag) = self.reads.get(&read.i32())?;
        let thread = read.object();
        let mut guesses = self.guesses.lock().unwrap_or_else(|e| e.into_inner());
        if !read.ok() || !guesses.hold() {
            return None;
        }
        let frame = guesses.guess(thread)?;
        guesses.resumed(Some(thread));
        let (id, reply) = outbox.read_then_go(&self.sizes, thread, frame, &[(slot, tag)]);
        Some(Acted::Read(id, reply))
    }

    /// Counts `count` events when each is a hit of a counting breakpoint; else counts none.
    fn count(&mut self, read: &mut In<'_>, count: i32) -> bool {
        let mut hits = Vec::new();
        for _ in 0..count {
            let (kind, request) = (read.u8(), read.i32());
            let (_thread, _at) = (read.object(), read.location());
            if kind != kind::BREAKPOINT || !self.counts.contains_key(&request) || !read.ok() {
                return false;
            }
            hits.push(request);
        }
        for request in hits {
            *self.counts.entry(request).or_default() += 1;
        }
        true
    }
}

/// What reaches a debugger of JVMs on one channel: a JVM that connected (its connection
/// number, the client, the peer's address to find its process by), or a packet of one
/// already connected, in the order they came.
pub(crate) enum Incoming {
    Connected { conn: usize, client: Client, peer: std::net::SocketAddr },
    Packet(Packet),
}

impl Client {
    /// Shakes hands on an accepted connection and starts reading it: its events go to
    /// `events`, tagged `conn`.
    pub(crate) fn start(
        mut stream: TcpStream,
        conn: usize,
        events: Sender<Incoming>,
    ) -> io::Result<Client> {
        stream.set_read_timeout(Some(Duration::from_secs(5)))?;
        stream.write_all(HANDSHAKE)?;
        let mut echo = [0u8; 14];
        stream.read_exact(&mut echo)?;
        if echo != HANDSHAKE {
            return Err(io::Error::other("the peer is not a JVM: no JDWP handshake"));
        }
        stream.set_read_timeout(None)?;
        stream.set_nodelay(true)?;
        let reading = stream.try_clone()?;
        let outbox = Outbox {
            writer: Arc::new(Mutex::new(stream)),
            next_id: Arc::new(AtomicU32::new(1)),
            pending: Arc::default(),
        };
        let reflex: Arc<Mutex<Option<Reflex>>> = Arc::default();
        let reader = {
            let (outbox, reflex) = (outbox.clone(), reflex.clone());
            JoinOnDrop::spawn(&format!("jdwp-{conn}"), move || {
                read(reading, &outbox, &reflex, conn, &events)
            })
        };
        Ok(Client { outbox, reflex, reader: Some(reader) })
    }

    /// Starts the reader's reflex, once the VM's id sizes are known; its frame guesses shared.
    pub(crate) fn start_reflex(&self, sizes: IdSizes, guesses: Arc<Mutex<vm::FrameGuesses>>) {
        *self.reflex.lock().unwrap_or_else(|e| e.into_inner()) = Some(Reflex::new(sizes, guesses));
    }

    /// Changes what the reader's reflex does.
    pub(crate) fn reflex<T>(&self, change: impl FnOnce(&mut Reflex) -> T) -> Option<T> {
        self.reflex.lock().unwrap_or_else(|e| e.into_inner()).as_mut().map(change)
    }

    /// Sends a command; its reply comes on the returned channel.
    pub(crate) fn send(&self, command: (u8, u8), data: &[u8]) -> Receiver<Result<Vec<u8>, Error>> {
        self.send_all(&[(command, data)]).pop().expect("one command sent")
    }

    /// Sends commands in one write (the VM runs them in order); each reply comes on its
    /// channel.
    pub(crate) fn send_all(&self, commands: &[((u8, u8), &[u8])]) -> Vec<Receiver<Reply>> {
        self.outbox.send_all(commands)
    }

    /// A frame's slots read and its thread let go in one write (the VM runs them in order,
    /// so the read runs while the thread is still held): where the read's reply comes.
    pub(crate) fn read_then_go(
        &self,
        sizes: &IdSizes,
        thread: Id,
        frame: Id,
        slots: &[(i32, u8)],
    ) -> Receiver<Reply> {
        self.outbox.read_then_go(sizes, thread, frame, slots).1
    }

    /// Sends a command and waits for its reply's data.
    pub(crate) fn request(&self, command: (u8, u8), data: &[u8]) -> Result<Vec<u8>, Error> {
        wait(&self.send(command, data), REPLY_WAIT)
    }

    /// Ends the connection: the reader sees its end; pending requests fail.
    pub(crate) fn close(&mut self) {
        let writer = self.outbox.writer.lock().unwrap_or_else(|e| e.into_inner());
        let _ = writer.shutdown(Shutdown::Both);
        drop(writer);
        drop(self.reader.take());
    }
}

/// What writes commands on a connection (a packet at a time) and routes their replies: the
/// client's, and its reader's for the reflex.
#[derive(Clone)]
struct Outbox {
    writer: Arc<Mutex<TcpStream>>,
    next_id: Arc<AtomicU32>,
    pending: Pending,
}

impl Outbox {
    /// Sends commands in one write (the VM runs them in order); each reply comes on its
    /// channel.
    fn send_all(&self, commands: &[((u8, u8), &[u8])]) -> Vec<Receiver<Reply>> {
        self.send_numbered(commands).into_iter().map(|(_, reply)| reply).collect()
    }

    /// [`Client::read_then_go`], with the read's request id.
    fn read_then_go(
        &self,
        sizes: &IdSizes,
        thread: Id,
        frame: Id,
        slots: &[(i32, u8)],
    ) -> (u32, Receiver<Reply>) {
        let mut read = wire::Out::new(sizes).object(thread).frame(frame).i32(slots.len() as i32);
        for &(slot, tag) in slots {
            read = read.i32(slot).u8(tag);
        }
        let resume = wire::Out::new(sizes).object(thread).bytes;
        let commands =
            [(cmd::FRAME_GET_VALUES, read.bytes.as_slice()), (cmd::THREAD_RESUME, &resume)];
        self.send_numbered(&commands).swap_remove(0)
    }

    /// [`Outbox::send_all`], each reply's channel with its request's id.
    fn send_numbered(&self, commands: &[((u8, u8), &[u8])]) -> Vec<(u32, Receiver<Reply>)> {
        let mut packets = Vec::new();
        let mut replies = Vec::with_capacity(commands.len());
        let mut ids = Vec::with_capacity(commands.len());
        for &((set, command), data) in commands {
            let id = self.next_id.fetch_add(1, Ordering::Relaxed);
            let (tx, rx) = crossbeam_channel::bounded(1);
            self.pending.lock().unwrap_or_else(|e| e.into_inner()).insert(id, tx);
            packets.extend_from_slice(&(11 + data.len() as u32).to_be_bytes());
            packets.extend_from_slice(&id.to_be_bytes());
            packets.extend_from_slice(&[0, set, command]);
            packets.extend_from_slice(data);
            replies.push((id, rx));
            ids.push(id);
        }
        let written = self.writer.lock().unwrap_or_else(|e| e.into_inner()).write_all(&packets);
        if written.is_err() {
            let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
            for id in ids {
                if let Some(tx) = pending.remove(&id) {
                    let _ = tx.send(Err(Error::Gone));
                }
            }
        }
        replies
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        self.close();
    }
}

/// A reply, waited for at most `wait`.
pub(crate) fn wait(
    reply: &Receiver<Result<Vec<u8>, Error>>,
    wait: Duration,
) -> Result<Vec<u8>, Error> {
    match reply.recv_timeout(wait) {
        Ok(answer) => answer,
        Err(crossbeam_channel::RecvTimeoutError::Timeout) => Err(Error::NoReply),
        Err(crossbeam_channel::RecvTimeoutError::Disconnected) => Err(Error::Gone),
    }
}

/// Reads packets until the connection ends; acts at once on the hits its reflex reads.
fn read(
    stream: TcpStream,
    outbox: &Outbox,
    reflex: &Mutex<Option<Reflex>>,
    conn: usize,
    events: &Sender<Incoming>,
) {
    let pending = &outbox.pending;
    // Buffered: a packet, or several the VM wrote at once, in one read.
    let mut stream = std::io::BufReader::with_capacity(64 * 1024, stream);
    let mut header = [0u8; 11];
    // A hit the reflex acted on, passed on once its value came: the read's request id.
    let mut held: Option<(u32, Packet)> = None;
    loop {
        if stream.read_exact(&mut header).is_err() {
            break;
        }
        let length = u32::from_be_bytes([header[0], header[1], header[2], header[3]]) as usize;
        let id = u32::from_be_bytes([header[4], header[5], header[6], header[7]]);
        let mut data = vec![0u8; length.saturating_sub(11)];
        if stream.read_exact(&mut data).is_err() {
            break;
        }
        if header[8] & 0x80 != 0 {
            let code = u16::from_be_bytes([header[9], header[10]]);
            let waiting = pending.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
            if let Some(tx) = waiting {
                let _ = tx.send(if code == 0 { Ok(data) } else { Err(Error::Vm(code)) });
            }
            // A hit the reflex acted on goes on with its value, one wake-up of the run.
            if held.as_ref().is_some_and(|(read, _)| *read == id) {
                let (_, packet) = held.take().expect("held");
                if events.send(Incoming::Packet(packet)).is_err() {
                    break;
                }
            }
        } else if (header[9], header[10]) == (64, 100) {
            if let Some((_, packet)) = held.take() {
                if events.send(Incoming::Packet(packet)).is_err() {
                    break;
                }
            }
            let mut reflex = reflex.lock().unwrap_or_else(|e| e.into_inner());
            let acted = reflex.as_mut().and_then(|r| r.act(&data, outbox));
            drop(reflex);
            match acted {
                Some(Acted::Read(id, read)) => {
                    held = Some((id, Packet { conn, data: Some(data), read: Some(read) }));
                }
                Some(Acted::Counted) => {}
                None => {
                    let packet = Packet { conn, data: Some(data), read: None };
                    if events.send(Incoming::Packet(packet)).is_err() {
                        break;
                    }
                }
            }
        }
    }
    if let Some((_, packet)) = held.take() {
        let _ = events.send(Incoming::Packet(packet));
    }
    let _ = events.send(Incoming::Packet(Packet { conn, data: None, read: None }));
    // Every request still waiting fails now; the event channel closes with `events`.
    for (_, tx) in pending.lock().unwrap_or_else(|e| e.into_inner()).drain() {
        let _ = tx.send(Err(Error::Gone));
    }
}

/// Event kinds (`EventKind`).
pub(crate) mod kind {
    pub(crate) const SINGLE_STEP: u8 = 1;
    pub(crate) const BREAKPOINT: u8 = 2;
    pub(crate) const EXCEPTION: u8 = 4;
    pub(crate) const THREAD_START: u8 = 6;
    pub(crate) const THREAD_DEATH: u8 = 7;
    pub(crate) const FIELD_ACCESS: u8 = 20;
    pub(crate) const FIELD_MODIFICATION: u8 = 21;
    pub(crate) const CLASS_PREPARE: u8 = 8;
    pub(crate) const METHOD_ENTRY: u8 = 40;
    pub(crate) const METHOD_EXIT_WITH_RETURN_VALUE: u8 = 42;
    pub(crate) const VM_START: u8 = 90;
    pub(crate) const VM_DEATH: u8 = 99;
}

/// Suspend policies.
pub(crate) mod suspend {
    pub(crate) const NONE: u8 = 0;
    pub(crate) const EVENT_THREAD: u8 = 1;
    pub(crate) const ALL: u8 = 2;
}

/// One event of a composite.
#[derive(Debug, Clone)]
pub(crate) enum Event {
    VmStart {
        thread: Id,
    },
    VmDeath,
    Breakpoint {
        request: i32,
        thread: Id,
        at: Location,
    },
    /// `catch` is none when nothing catches it.
    Exception {
        request: i32,
        thread: Id,
        at: Location,
        exception: Value,
        catch: Location,
    },
    Step {
        request: i32,
        thread: Id,
    },
    MethodEntry {
        request: i32,
        thread: Id,
        at: Location,
    },
    /// A method returned `value` (JDWP says nothing of a method an exception leaves).
    MethodExit {
        request: i32,
        thread: Id,
        at: Location,
        value: Value,
    },
    ClassPrepare {
        thread: Id,
        class: Id,
        signature: String,
    },
    /// A watched field was read, or (`modified`) is about to be written.
    Field {
        request: i32,
        thread: Id,
        modified: bool,
    },
    ThreadStart {
        thread: Id,
    },
    ThreadDeath {
        thread: Id,
    },
    /// A kind not asked for here.
    Other,
}

impl Event {
    /// The thread the event happened in, when it has one.
    pub(crate) fn thread(&self) -> Option<Id> {
        match *self {
            Event::VmStart { thread }
            | Event::Breakpoint { thread, .. }
            | Event::Exception { thread, .. }
            | Event::Step { thread, .. }
            | Event::MethodEntry { thread, .. }
            | Event::MethodExit { thread, .. }
            | Event::ClassPrepare { thread, .. }
            | Event::Field { thread, .. }
            | Event::ThreadStart { thread }
            | Event::ThreadDeath { thread } => Some(thread),
            Event::VmDeath | Event::Other => None,
        }
    }
}

/// An `Event.Composite`'s suspend policy and events; `None` when it cannot be read.
pub(crate) fn parse_composite(data: &[u8], sizes: &IdSizes) -> Option<(u8, Vec<Event>)> {
    let mut read = In::new(data, sizes);
    let policy = read.u8();
    let count = read.count();
    let mut events = Vec::with_capacity(count);
    for _ in 0..count {
        let kind = read.u8();
        let request = read.i32();
        let event = match kind {
            kind::VM_START => Event::VmStart { thread: read.object() },
            kind::VM_DEATH => Event::VmDeath,
            kind::BREAKPOINT => {
                Event::Breakpoint { request, thread: read.object(), at: read.location() }
            }
            kind::SINGLE_STEP => {
                let step = Event::Step { request, thread: read.object() };
                let _at = read.location();
                step
            }
            kind::METHOD_ENTRY => {
                Event::MethodEntry { request, thread: read.object(), at: read.location() }
            }
            kind::METHOD_EXIT_WITH_RETURN_VALUE => Event::MethodExit {
                request,
                thread: read.object(),
                at: read.location(),
                value: read.value(),
            },
            kind::EXCEPTION => Event::Exception {
                request,
                thread: read.object(),
                at: read.location(),
                exception: read.value(),
                catch: read.location(),
            },
            kind::CLASS_PREPARE => {
                let thread = read.object();
                let _tag = read.u8();
                let class = read.class();
                let signature = read.string();
                let _status = read.i32();
                Event::ClassPrepare { thread, class, signature }
            }
            kind::FIELD_ACCESS | kind::FIELD_MODIFICATION => {
                let thread = read.object();
                let _at = read.location();
                let (_tag, _class, _field) = (read.u8(), read.class(), read.field());
                let _object = read.value();
                let modified = kind == kind::FIELD_MODIFICATION;
                if modified {
                    let _to_be = read.value();
                }
                Event::Field { request, thread, modified }
            }
            kind::THREAD_START => Event::ThreadStart { thread: read.object() },
            kind::THREAD_DEATH => Event::ThreadDeath { thread: read.object() },
            // Its layout is not known here: the rest of the composite cannot be read.
            _ => {
                events.push(Event::Other);
                break;
            }
        };
        events.push(event);
    }
    read.ok().then_some((policy, events))
}
