//! debug-mcp's own Python debugger, started with the program (`session.py`, `stops.py`): no
//! package to install, the program's own process is the debug adapter. The program runs with
//! our helpers first on its `PYTHONPATH` and `DEBUG_MCP_DAP` naming a Unix socket in a private
//! scratch directory; its sitecustomize.py connects there before the program's first line and
//! speaks DAP, so the DAP session backend (`dap/session.rs`) serves it as it serves debugpy,
//! through the same flavour ([`super::Python`]).

use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::Sender;
use serde_json::{json, Value};

use super::{helper_dir, parse, python_path, Target};
use crate::dap::flavour::{Arrivals, Launched};
use crate::dap::Client;
use crate::debugger::{Code, Failure};
use crate::process::{self, Debuggee, SpawnError};
use crate::shell::CommandLine;
use crate::thread::JoinOnDrop;

/// How long the program has to connect: its interpreter's start and our sitecustomize.py.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(20);

/// Where the program's debugger connects: a socket in a directory of the server's own,
/// removed once it did.
struct Listener {
    dir: PathBuf,
    path: PathBuf,
    socket: UnixListener,
}

impl Listener {
    fn open() -> Result<Listener, Failure> {
        let internal = |e: std::io::Error| {
            Failure::new(Code::Internal, format!("cannot open the debugger's socket: {e}"))
        };
        let dir = crate::scratch::private_dir("python-session").map_err(internal)?;
        let path = dir.join("dap");
        let socket = UnixListener::bind(&path).map_err(internal)?;
        socket.set_nonblocking(true).map_err(internal)?;
        Ok(Listener { dir, path, socket })
    }

    /// The program's connection, once it made it; a failure when it ended first or took too
    /// long.
    fn accept(&self, program: &mut Debuggee) -> Result<UnixStream, Failure> {
        let deadline = Instant::now() + CONNECT_TIMEOUT;
        loop {
            match self.socket.accept() {
                Ok((stream, _)) => {
                    let _ = stream.set_nonblocking(false);
                    return Ok(stream);
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => {
                    return Err(Failure::new(
                        Code::Internal,
                        format!("the debugger's socket failed: {e}"),
                    ))
                }
            }
            if program.try_exit().is_some() || Instant::now() > deadline {
                return Err(ended_early(program));
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// After the program's own connection: every other Python process of it (a `subprocess`
/// child, a `multiprocessing` worker, a forked child reconnecting, a pytest-xdist worker)
/// connects as a child, until the session ends.
struct Acceptor {
    listener: Arc<Listener>,
    stopping: Arc<AtomicBool>,
    thread: Option<JoinOnDrop>,
}

impl Acceptor {
    fn start(listener: Listener) -> Result<(Acceptor, Arrivals), Failure> {
        let internal = |e: std::io::Error| {
            Failure::new(Code::Internal, format!("cannot follow the program's children: {e}"))
        };
        listener.socket.set_nonblocking(false).map_err(internal)?;
        let listener = Arc::new(listener);
        let stopping = Arc::new(AtomicBool::new(false));
        let (clients_tx, clients) = crossbeam_channel::unbounded();
        let (events_tx, events) = crossbeam_channel::unbounded();
        let thread = JoinOnDrop::spawn("py-children", {
            let (listener, stopping, events_tx) =
                (listener.clone(), stopping.clone(), events_tx.clone());
            move || accept_children(&listener.socket, &stopping, &clients_tx, &events_tx)
        });
        let acceptor = Acceptor { listener, stopping, thread: Some(thread) };
        let arrivals = Arrivals { clients, events, events_tx, keep: Box::new(()) };
        Ok((acceptor, arrivals))
    }
}

impl Drop for Acceptor {
    fn drop(&mut self) {
        // Wake the acceptor with a connection of our own.
        self.stopping.store(true, Ordering::Relaxed);
        drop(UnixStream::connect(&self.listener.path));
        drop(self.thread.take());
    }
}

fn accept_children(
    listener: &UnixListener,
    stopping: &AtomicBool,
    clients: &Sender<Client>,
    events: &Sender<Value>,
) {
    let mut connection = 0;
    for stream in listener.incoming() {
        if stopping.load(Ordering::Relaxed) {
            return;
        }
        let Ok(stream) = stream else { continue };
        let client = match Client::over_unix(stream, Some((events.clone(), connection + 1))) {
            Ok(client) => client,
            Err(e) => {
                crate::log::warn(format_args!("cannot follow a child process: {e}"));
                continue;
            }
        };
        connection += 1;
        if clients.send(client).is_err() {
            return;
        }
        let arrived = json!({"type": "event", "event": "arrived", "connection": connection});
        if events.send(arrived).is_err() {
            return;
        }
    }
}

/// The program ended, or never connected, before its debugger could start: in its own words.
pub(crate) fn ended_early(program: &mut Debuggee) -> Failure {
    let exit = program.finish(Duration::from_millis(500));
    program.settle_output();
    let output = program.output();
    let (stdout, stderr, ..) = output.since(0, 0);
    let said = format!("{stdout}{stderr}");
    let said = match said.trim() {
        "" => "it printed nothing".to_string(),
        said => crate::debugger::limits::clip(said, 2000),
    };
    Failure::new(
        Code::AdapterFailed,
        format!(
            "the Python program ended ({}) before its debugger connected: it did not load \
             debug-mcp's sitecustomize.py from PYTHONPATH (a wrapper that runs Python with -I, \
             -E or -S? give the interpreter itself: `python app.py`), or the debugger did not \
             start. It said: {said}",
            exit.describe()
        ),
    )
}

/// Starts the program with our debugger in it and takes its connection.
pub(crate) fn start(command: &CommandLine, stop_on_entry: bool) -> Result<Launched, Failure> {
    let program = parse(command.clone()).map_err(|m| Failure::new(Code::InvalidCommand, m))?;
    let helpers = helper_dir().map_err(|m| Failure::new(Code::Internal, m))?;
    let listener = Listener::open()?;
    // A program that skips sitecustomize.py (-I, -E, -S) runs through debug_mcp_run.py.
    let mut args = program.python_args.clone();
    if !program.loads_sitecustomize() {
        args.push(helpers.join("debug_mcp_run.py").display().to_string());
    }
    match &program.target {
        Target::Program(path) => args.push(path.display().to_string()),
        Target::Module(module) => args.extend(["-m".to_string(), module.clone()]),
    }
    args.extend(program.args.iter().cloned());
    let mut env = program.env.clone();
    env.push(("PYTHONPATH".into(), python_path(&program.env, &helpers)));
    env.push(("DEBUG_MCP_DAP".into(), listener.path.display().to_string()));
    let spec = process::Spec {
        program: program.interpreter.clone(),
        args,
        env,
        cwd: program.cwd.clone(),
        stdin: program.stdin.clone(),
        ..process::Spec::default()
    };
    let mut debuggee = Debuggee::spawn(&spec, |_| false).map_err(|e| match e {
        SpawnError::NotFound(_) => Failure::new(Code::CommandNotFound, e.to_string()),
        SpawnError::Other(..) => Failure::new(Code::SpawnFailed, e.to_string()),
    })?;
    let connected = listener.accept(&mut debuggee).and_then(|stream| {
        let client = Client::over_unix(stream, None).map_err(|e| {
            Failure::new(Code::Internal, format!("the debugger's connection failed: {e}"))
        })?;
        let (acceptor, mut arrivals) = Acceptor::start(listener)?;
        arrivals.keep = Box::new(acceptor);
        Ok((client, arrivals))
    });
    let (client, arrivals) = match connected {
        Ok(connected) => connected,
        Err(failure) => {
            debuggee.kill();
            return Err(failure);
        }
    };
    let arguments = json!({"stopOnEntry": stop_on_entry,
                           "pauseSignal": crate::sys::hang_signal()});
    Ok(Launched {
        client,
        output: Some(debuggee.output().clone()),
        adapter: debuggee,
        arguments,
        prepared: true,
        label: program.interpreter,
        request: "attach",
        arrivals: Some(arrivals),
    })
}
