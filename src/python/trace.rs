//! `debug-script` for Python without a debugger: the program runs as it is, with debug-mcp's
//! helpers first on its `PYTHONPATH`; their sitecustomize.py starts line probes
//! (`trace.py`: `sys.monitoring` on CPython 3.12+, `sys.settrace` before) in every Python
//! process of the program, which inherits the plan through its environment. Each process
//! reports on a connection of its own (the process the run starts, on one it inherits; the
//! others to a Unix socket in a private scratch directory): its `hello`, the line a probe
//! resolved to, and each hit as the probe encoded it.
//!
//! Nothing pauses, nothing round-trips per hit: the cost is Python's own (debugpy's adapter,
//! launcher and pydevd took over a second before the first line ran). debugpy stays for
//! sessions (`dap/session.rs`). A program run with -I, -E or -S skips sitecustomize.py: it runs
//! through `run.py` (`python -I run.py script.py args`), which starts the probes and then the
//! program as `python` would.

use std::io::{BufRead, BufReader, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use crossbeam_channel::{Receiver, Sender};
use serde_json::{json, Map, Value};

use crate::call::Call;
use crate::debugger::backend::{Input, Inputs};
use crate::debugger::calls::Calls;
use crate::debugger::hang::{thread_record, Walked};
use crate::debugger::limits;
use crate::debugger::model::Undebugged;
use crate::debugger::script::{self, Collector, Debugged, Hit, Outcome, Plan, Step};
use crate::debugger::{Code, Failure};
use crate::process::{self, Debuggee, Exit, SpawnError};
use crate::thread::JoinOnDrop;
use crate::{log, python};

/// Frames reported per hit with `includeStack`.
const STACK_FRAMES: usize = 10;
/// How long the program's processes have to say where their threads are, before the kill.
const HANG_WAIT: std::time::Duration = std::time::Duration::from_millis(300);

/// A thread's record (`debugger::hang`) from the tracer's `{thread, state?, frames: [{function,
/// file, line, own, locals?}]}`.
fn hang_thread(pid: u32, thread: &Value) -> Value {
    let frames = thread["frames"].as_array().cloned().unwrap_or_default();
    let walked: Vec<Walked> = frames
        .iter()
        .map(|f| Walked {
            function: f["function"].as_str().unwrap_or_default().to_string(),
            file: f["file"].as_str().map(String::from),
            line: f["line"].as_u64().unwrap_or(0),
            own: f["own"] == true,
        })
        .collect();
    let name = thread["thread"].as_str().unwrap_or_default();
    let mut locals = |i: usize| frames[i].get("locals").cloned().unwrap_or_else(|| json!({}));
    thread_record(pid, name, &walked, thread["state"].as_str(), &mut locals)
}

/// What a process of the program said, on its connection (`conn`).
enum Report {
    /// It started: its pid, its parent's, its command line; and the write half of its
    /// connection, to tell it to stop.
    Hello { conn: usize, pid: u32, parent: u32, command: String, writer: UnixStream },
    /// The line a probe stops at (0: none).
    Resolved { probe: usize, line: u32 },
    /// One hit of probe `probe`: was the value cut, its `{type, value}` (or `{locals}`), and
    /// its stack when asked for.
    Hit { conn: usize, probe: usize, truncated: bool, result: String, stack: Option<Vec<Value>> },
    /// A failure, `{kind, type, message, test?, frames, framesOmitted?}`.
    Failed { conn: usize, failure: Value },
    /// Where every thread is, asked by the hang signal: `[{thread, state?, frames}]`.
    Hang { conn: usize, threads: Value },
    /// Traced calls that ended (`debugger::calls` records), and those left out per function.
    Calls { conn: usize, records: Vec<Value>, omitted: Map<String, Value> },
    /// The connection ended: the process exited (or closed it).
    Closed { conn: usize },
}

pub(crate) fn run(plan: &Plan, call: &Call) -> Result<Outcome, Failure> {
    let deadline = Instant::now() + plan.timeout;
    let reports = Reports::open()?;
    let inherited = reports.inherited();
    let fd = inherited.as_ref().map(|stream| stream.as_raw_fd());
    let spec = spec(plan, &reports, fd)?;
    let kept: Vec<(RawFd, RawFd)> = fd.map(|fd| (fd, fd)).into_iter().collect();
    let debuggee = Debuggee::spawn_inheriting(&spec, |_| false, &kept).map_err(|e| match e {
        SpawnError::NotFound(_) => Failure::new(Code::CommandNotFound, e.to_string()),
        SpawnError::Other(..) => Failure::new(Code::SpawnFailed, e.to_string()),
    })?;
    drop(inherited); // ours closed: the connection ends with the program's end
    call.log.send("info", format!("program started (pid {})", debuggee.pid()));
    let mut run = Run {
        plan,
        reports,
        exited: debuggee.exited().clone(),
        top_exited: false,
        debuggee,
        processes: Vec::new(),
        resolved: Vec::new(),
        capped: false,
    };
    crate::debugger::runs::drive(&mut run, Ok(()), plan, call, deadline)
}

/// The command as it runs: as written, with the plan and the helpers in its environment (and
/// the connection it inherits, `fd`); a program that skips sitecustomize.py (-I, -E, -S)
/// through `run.py`.
fn spec(plan: &Plan, reports: &Reports, fd: Option<RawFd>) -> Result<process::Spec, Failure> {
    let helpers = python::helper_dir().map_err(|m| Failure::new(Code::Internal, m))?;
    let command = &plan.command;
    let mut words = command.words.clone();
    if let Ok(program) = python::parse(command.clone()) {
        if !program.loads_sitecustomize() {
            let mut through = vec![program.interpreter.clone()];
            through.extend(program.python_args.iter().cloned());
            through.push(helpers.join("debug_mcp_run.py").display().to_string());
            match &program.target {
                python::Target::Program(path) => through.push(path.display().to_string()),
                python::Target::Module(module) => through.extend(["-m".into(), module.clone()]),
            }
            through.extend(program.args.iter().cloned());
            words = through;
        }
    }
    let probes: Vec<Value> = (plan.watched().iter())
        .map(|p| {
            json!({"file": p.real_file.display().to_string(), "line": p.line,
                   "condition": p.condition, "expression": p.expression})
        })
        .collect();
    let calls: Vec<Value> = (plan.calls.iter())
        .map(|c| json!({"file": c.real_file.display().to_string(), "function": c.function}))
        .collect();
    let trace = json!({"probes": probes, "socket": reports.path.display().to_string(),
                       "maxHits": plan.max_hits, "maxChars": limits::VALUE_CHARS,
                       "stack": plan.include_stack, "stackFrames": STACK_FRAMES,
                       "failures": plan.failures.unwrap_or(0),
                       "userUnhandled": plan.user_unhandled,
                       "calls": calls, "maxCalls": plan.max_calls,
                       "hangSignal": crate::sys::hang_signal(),
                       "limits": {"frames": limits::FAILURE_FRAMES,
                                  "message": limits::FAILURE_MESSAGE,
                                  "locals": limits::LOCALS_SHOWN,
                                  "preview": limits::LOCAL_PREVIEW}});
    let mut env = command.env.clone();
    env.push(("PYTHONPATH".into(), python::python_path(&command.env, &helpers)));
    env.push(("DEBUG_MCP_TRACE".into(), python::ascii_json(&trace)));
    env.push(("DEBUG_MCP_TRACE_RESOLVE".into(), "1".into()));
    if let Some(fd) = fd {
        // Its process only: the one whose parent is this server.
        env.push(("DEBUG_MCP_TRACE_FD".into(), format!("{fd}:{}", std::process::id())));
    }
    Ok(process::Spec::of(&words, env, command))
}

/// The socket the program's processes report on, the thread that accepts them, and one
/// reader thread per connection; all of them end when this is dropped.
struct Reports {
    dir: PathBuf,
    path: PathBuf,
    events: Receiver<Report>,
    events_tx: Sender<Report>,
    stopping: Arc<AtomicBool>,
    /// The accepting thread, then each connection's reader (joined in that order).
    acceptor: Option<JoinOnDrop>,
    readers: Readers,
}

/// Each connection's reader, and the next connection's number.
#[derive(Clone, Default)]
struct Readers(Arc<std::sync::Mutex<Connections>>);

#[derive(Default)]
struct Connections {
    /// Each connection's stream (to end it) and its reader thread.
    open: Vec<(UnixStream, JoinOnDrop)>,
    next: usize,
}

impl Readers {
    /// Reads the reports of a new connection.
    fn add(&self, stream: UnixStream, events: &Sender<Report>) {
        let (Ok(reading), Ok(writer)) = (stream.try_clone(), stream.try_clone()) else { return };
        let mut connections = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let conn = connections.next;
        connections.next += 1;
        let events = events.clone();
        let reader = JoinOnDrop::spawn(&format!("py-report-{conn}"), move || {
            read(conn, reading, writer, &events)
        });
        connections.open.push((stream, reader));
    }

    /// Ends every connection, then its reader.
    fn end(&self) {
        let readers = std::mem::take(&mut self.0.lock().unwrap_or_else(|e| e.into_inner()).open);
        for (stream, reader) in readers {
            let _ = stream.shutdown(std::net::Shutdown::Both);
            drop(reader);
        }
    }
}

impl Reports {
    fn open() -> Result<Reports, Failure> {
        let dir = crate::scratch::private_dir("python-run").map_err(|e| {
            Failure::new(Code::Internal, format!("cannot make the probes' channel: {e}"))
        })?;
        let path = dir.join("reports");
        let listener = UnixListener::bind(&path).map_err(|e| {
            Failure::new(
                Code::Internal,
                format!("cannot open the probes' socket {}: {e}", path.display()),
            )
        })?;
        let (events_tx, events) = crossbeam_channel::unbounded();
        let stopping = Arc::new(AtomicBool::new(false));
        let readers = Readers::default();
        let acceptor = {
            let (stopping, readers, events_tx) =
                (stopping.clone(), readers.clone(), events_tx.clone());
            JoinOnDrop::spawn("py-reports", move || {
                accept(&listener, &events_tx, &stopping, &readers)
            })
        };
        let acceptor = Some(acceptor);
        Ok(Reports { dir, path, events, events_tx, stopping, acceptor, readers })
    }

    /// A connection for the process the run starts, which inherits its other end: then it
    /// reports without importing a socket module (~0.6 ms of a Python start, measured on 3.11).
    /// Its children connect to the socket.
    fn inherited(&self) -> Option<UnixStream> {
        let (ours, theirs) = UnixStream::pair().ok()?;
        self.readers.add(ours, &self.events_tx);
        Some(theirs)
    }
}

impl Drop for Reports {
    fn drop(&mut self) {
        // Wake the acceptor with a connection of our own, then end every connection: the
        // readers see end of file even where a process still holds its end.
        self.stopping.store(true, Ordering::Relaxed);
        drop(UnixStream::connect(&self.path));
        drop(self.acceptor.take());
        self.readers.end();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn accept(
    listener: &UnixListener,
    events: &Sender<Report>,
    stopping: &AtomicBool,
    readers: &Readers,
) {
    for stream in listener.incoming() {
        if stopping.load(Ordering::Relaxed) {
            return;
        }
        if let Ok(stream) = stream {
            readers.add(stream, events);
        }
    }
}

/// One process's reports, line by line, until its connection ends.
fn read(conn: usize, stream: UnixStream, writer: UnixStream, events: &Sender<Report>) {
    let mut writer = Some(writer);
    for line in BufReader::new(stream).lines() {
        let Ok(line) = line else { break };
        let mut fields = line.splitn(4, '\t');
        let report = match fields.next() {
            Some("hello") => {
                let hello: Value =
                    serde_json::from_str(fields.next().unwrap_or_default()).unwrap_or_default();
                let number = |key: &str| hello[key].as_u64().and_then(|n| u32::try_from(n).ok());
                let argv: Vec<&str> = hello["argv"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .collect();
                let Some(writer) = writer.take() else { continue };
                Report::Hello {
                    conn,
                    pid: number("pid").unwrap_or(0),
                    parent: number("ppid").unwrap_or(0),
                    command: argv.join(" "),
                    writer,
                }
            }
            Some("resolved") => {
                let resolved: Value =
                    serde_json::from_str(fields.next().unwrap_or_default()).unwrap_or_default();
                // `null`: the file is not Python the interpreter can compile; it says so itself.
                let probe = resolved["probe"].as_u64().unwrap_or(0) as usize;
                match resolved["line"].as_u64().and_then(|l| u32::try_from(l).ok()) {
                    Some(line) => Report::Resolved { probe, line },
                    None => continue,
                }
            }
            Some("hit") => {
                let probe = fields.next().and_then(|p| p.parse().ok()).unwrap_or(0);
                let stack = fields.next().filter(|s| !s.is_empty());
                let stack = stack.and_then(|s| serde_json::from_str::<Vec<Value>>(s).ok());
                let Some((truncated, result)) = fields.next().and_then(script::flagged) else {
                    log::warn(format_args!("an unreadable hit report: {line}"));
                    continue;
                };
                Report::Hit { conn, probe, truncated, result: result.to_string(), stack }
            }
            Some("failure") => match serde_json::from_str(fields.next().unwrap_or_default()) {
                Ok(failure) => Report::Failed { conn, failure },
                Err(_) => continue,
            },
            Some("hang") => match serde_json::from_str(fields.next().unwrap_or_default()) {
                Ok(threads) => Report::Hang { conn, threads },
                Err(_) => continue,
            },
            Some("calls") => {
                let records = serde_json::from_str(fields.next().unwrap_or_default());
                let omitted = serde_json::from_str(fields.next().unwrap_or_default());
                match (records, omitted) {
                    (Ok(records), Ok(omitted)) => Report::Calls { conn, records, omitted },
                    _ => continue,
                }
            }
            _ => {
                log::warn(format_args!("an unreadable report: {line}"));
                continue;
            }
        };
        if events.send(report).is_err() {
            return;
        }
    }
    let _ = events.send(Report::Closed { conn });
}

/// A Python process of the program, as it said hello.
struct Process {
    conn: usize,
    pid: u32,
    parent: u32,
    command: String,
    hits: u64,
    writer: UnixStream,
    /// Its connection ended.
    closed: bool,
}

struct Run<'a> {
    plan: &'a Plan,
    reports: Reports,
    debuggee: Debuggee,
    /// The program's exit, until it came (then never).
    exited: Receiver<Exit>,
    top_exited: bool,
    processes: Vec<Process>,
    /// The line each probe resolved to, as the first process said.
    resolved: Vec<Option<u32>>,
    /// The hit cap was reached: every process is told to stop.
    capped: bool,
}

impl Run<'_> {
    /// The pid of the process on connection `conn` (0 before it said hello).
    fn pid_of(&self, conn: usize) -> u32 {
        self.processes.iter().find(|p| p.conn == conn).map_or(0, |p| p.pid)
    }

    fn tell_stop(writer: &mut UnixStream) {
        let _ = writer.write_all(b"stop\n");
    }
}

impl Run<'_> {
    /// Finished once the program's process exited and every connection has ended (a child
    /// still running is killed at the end; its last reports wait for the drain's grace).
    fn ended(&self) -> Step {
        match self.top_exited && self.processes.iter().all(|p| p.closed) {
            true => Step::Finished,
            false => Step::Go,
        }
    }
}

impl Collector for Run<'_> {
    type Event = Report;

    fn inputs(&self) -> Inputs<Report> {
        Inputs {
            events: self.reports.events.clone(),
            exited: self.exited.clone(),
            tick: crossbeam_channel::never(),
            more: crossbeam_channel::never(),
        }
    }

    fn handle(&mut self, input: Input<Report>) -> Result<Step, Failure> {
        match input {
            Input::Event(Report::Hello { conn, pid, parent, command, mut writer }) => {
                if self.capped {
                    Run::tell_stop(&mut writer);
                }
                let command = match pid == self.debuggee.pid() {
                    // The started process as the agent wrote it (a console script, not its
                    // interpreter and path).
                    true => crate::shell::join(&self.plan.command.words),
                    false => command,
                };
                let closed = false;
                self.processes.push(Process {
                    conn,
                    pid,
                    parent,
                    command,
                    hits: 0,
                    writer,
                    closed,
                });
                Ok(Step::Go)
            }
            Input::Event(Report::Resolved { probe, line }) => {
                if self.resolved.len() > probe {
                    return Ok(Step::Go);
                }
                self.resolved.push(Some(line));
                if line == 0 {
                    let (file, asked) = match self.plan.probes.get(probe) {
                        Some(p) => (&p.file, p.line),
                        None => (&self.plan.file, self.plan.line),
                    };
                    let which = match self.plan.probes.is_empty() {
                        true => String::new(),
                        false => format!("probe {probe}: "),
                    };
                    return Err(Failure::new(
                        Code::NoCodeAtLine,
                        format!(
                            "{which}line {asked} of {}: Python cannot stop on that line: it \
                             holds no code (a comment, a blank line or a docstring before the \
                             first statement?); choose a line with a statement",
                            file.display()
                        ),
                    ));
                }
                Ok(Step::Go)
            }
            Input::Event(Report::Hit { conn, probe, truncated, result, stack }) => {
                let process = self.processes.iter_mut().find(|p| p.conn == conn);
                let from = process.map(|p| {
                    p.hits += 1;
                    format!("\"pid\":{}", p.pid)
                });
                let hit = Hit { result, truncated, stack, from };
                Ok(Step::Hit(match self.plan.probes.is_empty() {
                    true => hit,
                    false => hit.of_probe(probe),
                }))
            }
            Input::Event(Report::Failed { conn, mut failure }) => {
                if let Some(process) = self.processes.iter().find(|p| p.conn == conn) {
                    failure["process"] = process.pid.into();
                }
                Ok(Step::Failed(failure))
            }
            Input::Event(Report::Closed { conn }) => {
                if let Some(process) = self.processes.iter_mut().find(|p| p.conn == conn) {
                    process.closed = true;
                }
                Ok(self.ended())
            }
            Input::Exited(exit) => {
                self.exited = crossbeam_channel::never();
                self.top_exited = true;
                if let Some(exit) = exit {
                    self.debuggee.record_exit(exit);
                }
                Ok(match self.ended() {
                    // None said hello yet: its connection may still wait to be accepted, with
                    // what it said (a probe's line without code ends the first process at
                    // once): read on briefly.
                    Step::Finished if !self.processes.is_empty() => Step::Finished,
                    // What the processes sent may still be on its way: read on briefly.
                    _ => Step::Draining,
                })
            }
            Input::Event(Report::Calls { conn, records, omitted }) => {
                Ok(Step::Calls { pid: self.pid_of(conn), records, omitted })
            }
            Input::Event(Report::Hang { .. }) | Input::Closed | Input::Tick => Ok(Step::Go),
        }
    }

    /// Each Python process is sent the hang signal: its handler reports every thread; a
    /// process that does not answer within `HANG_WAIT` (in C code that does not let Python
    /// run signal handlers) is left out.
    fn hang(&mut self, calls: &mut Calls) -> Vec<Value> {
        let mut waiting: Vec<usize> = Vec::new();
        for process in self.processes.iter().filter(|p| !p.closed) {
            if crate::sys::signal(process.pid, crate::sys::hang_signal()) {
                waiting.push(process.conn);
            }
        }
        let deadline = crossbeam_channel::after(HANG_WAIT);
        let mut threads = Vec::new();
        while !waiting.is_empty() {
            let report = crossbeam_channel::select! {
                recv(self.reports.events) -> report => report,
                recv(deadline) -> _ => break,
            };
            let (conn, reported) = match report {
                Ok(Report::Hang { conn, threads }) => (conn, threads),
                // Its calls still running come first.
                Ok(Report::Calls { conn, records, omitted }) => {
                    calls.add(self.pid_of(conn), records, &omitted, self.plan.max_calls);
                    continue;
                }
                _ => continue,
            };
            waiting.retain(|&c| c != conn);
            let pid = self.pid_of(conn);
            for thread in reported.as_array().into_iter().flatten() {
                threads.push(hang_thread(pid, thread));
            }
        }
        threads
    }

    fn activity(&self) -> u64 {
        self.debuggee.output().written() + self.processes.len() as u64
    }

    fn stop_hits(&mut self) {
        self.capped = true;
        for process in &mut self.processes {
            Run::tell_stop(&mut process.writer);
        }
    }

    fn end(&mut self, timed_out: bool) -> Exit {
        self.debuggee.end_run(timed_out)
    }

    fn abort(&mut self) {
        self.debuggee.kill();
    }

    fn output(&self) -> Value {
        self.debuggee.output().to_json()
    }

    fn stopped(&self) -> Vec<crate::process::Stopped> {
        self.debuggee.stopped()
    }

    fn undebugged(&self) -> Undebugged {
        let followed: Vec<u32> = self.processes.iter().map(|p| p.pid).collect();
        Undebugged::of(&self.debuggee, &followed)
    }

    fn processes(&self) -> Vec<Value> {
        // The started process first (when it is Python), then in the order they came.
        let top = self.debuggee.pid();
        script::listed(
            top,
            self.processes.iter().map(|p| Debugged {
                pid: p.pid,
                command: &p.command,
                parent: (p.pid != top).then_some(p.parent),
                hits: Some(p.hits),
                threads: Vec::new(),
            }),
        )
    }

    fn resolution(&mut self) -> (Option<u32>, Option<String>, Vec<Value>) {
        let first = self.resolved.first().copied().flatten();
        (first.filter(|line| *line > 0), None, Vec::new())
    }

    fn probe_lines(&self) -> Vec<Option<u32>> {
        self.resolved.clone()
    }

    fn no_hit_failure(&self, exit: Exit, timed_out: bool) -> Option<Failure> {
        // No Python process said hello: the command ran no Python that could be probed.
        (self.processes.is_empty() && !timed_out).then(|| {
            Failure::new(Code::Exited, "Process exited before breakpoint was hit")
                .with("exit", exit.describe().into())
                .with("hint", self.never_bound().into())
        })
    }

    fn never_bound(&self) -> String {
        match self.processes.is_empty() {
            true => format!(
                "no Python process of the program started with the probes (is the command \
                 Python, or does it start Python? A Python run with -I, -E or -S through a \
                 wrapper is not followed); {} never ran",
                self.plan.file.display()
            ),
            false => format!("{} could not be read as Python source", self.plan.file.display()),
        }
    }
}
