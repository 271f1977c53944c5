//! Debuggee processes: spawning without a shell, draining their output, watching for their exit,
//! and killing the whole process group when the owner is done with them.
//!
//! A [`Debuggee`] owns three threads: one waits for the exit (so the exit is a channel message a
//! session can `select!` on) and one drains each pipe into a bounded tail. Dropping it kills the
//! process group and joins them. This module knows nothing about Node or the inspector: the
//! caller passes a predicate for stderr lines that belong to the runtime rather than the program,
//! and receives those lines on a channel instead of in the tail.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::io::{self, Read};
use std::os::fd::RawFd;
use std::path::PathBuf;
use std::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use serde_json::{json, Value};

use crate::sys;
use crate::thread::JoinOnDrop;

/// How much of each stream's end is kept for the result.
pub(crate) const TAIL_BYTES: usize = 32 * 1024;

/// What to run: the program, its arguments, extra environment, variables to remove, the
/// working directory and the text its stdin reads (else end of file).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Spec {
    pub(crate) program: String,
    pub(crate) args: Vec<String>,
    pub(crate) env: Vec<(String, String)>,
    pub(crate) env_remove: Vec<String>,
    pub(crate) cwd: Option<std::path::PathBuf>,
    pub(crate) stdin: Option<String>,
}

impl Spec {
    /// `words` (a program and its arguments) run as `command` says: in its directory, fed
    /// its stdin, with `env` (its own variables and ours).
    pub(crate) fn of(
        words: &[String],
        env: Vec<(String, String)>,
        command: &crate::shell::CommandLine,
    ) -> Spec {
        let (program, args) = words.split_first().expect("a command has a program");
        Spec {
            program: program.clone(),
            args: args.to_vec(),
            env,
            env_remove: Vec::new(),
            cwd: command.cwd.clone(),
            stdin: command.stdin.clone(),
        }
    }
}

#[derive(Debug)]
pub(crate) enum SpawnError {
    NotFound(String),
    Other(String, io::Error),
}

impl std::fmt::Display for SpawnError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SpawnError::NotFound(program) => write!(
                f,
                "command not found: {program} (is it installed and on PATH? PATH is the server's)"
            ),
            SpawnError::Other(program, e) => write!(f, "could not start {program}: {e}"),
        }
    }
}

/// The last bytes of one output stream, and whether anything before them was dropped.
#[derive(Default)]
struct Tail {
    bytes: VecDeque<u8>,
    dropped: bool,
    /// Bytes ever written: a cursor for reading what came since.
    total: u64,
}

impl Tail {
    fn push(&mut self, data: &[u8]) {
        self.total += data.len() as u64;
        self.bytes.extend(data);
        if self.bytes.len() > TAIL_BYTES {
            let excess = self.bytes.len() - TAIL_BYTES;
            self.bytes.drain(..excess);
            self.dropped = true;
        }
    }

    /// What was written since byte `cursor` (as much as the tail still holds), whether some
    /// of it is gone, and the new cursor.
    fn since(&self, cursor: u64) -> (String, bool, u64) {
        let kept_from = self.total - self.bytes.len() as u64;
        let missed = cursor < kept_from;
        let skip = cursor.saturating_sub(kept_from).min(self.bytes.len() as u64) as usize;
        let bytes: Vec<u8> = self.bytes.iter().skip(skip).copied().collect();
        (String::from_utf8_lossy(&bytes).into_owned(), missed, self.total)
    }

    fn text(&self) -> String {
        let (a, b) = self.bytes.as_slices();
        let mut bytes = Vec::with_capacity(a.len() + b.len());
        bytes.extend_from_slice(a);
        bytes.extend_from_slice(b);
        // The cut may fall inside a UTF-8 sequence; skip continuation bytes at the front.
        let start = if self.dropped {
            bytes.iter().position(|b| (b & 0xC0) != 0x80).unwrap_or(bytes.len())
        } else {
            0
        };
        String::from_utf8_lossy(&bytes[start..]).into_owned()
    }
}

/// The captured ends of stdout and stderr.
#[derive(Clone, Default)]
pub(crate) struct Output {
    stdout: Arc<Mutex<Tail>>,
    stderr: Arc<Mutex<Tail>>,
    /// Lines that are the runtime's, not the program's, left out where they reach the program's
    /// output another way (a test runner that echoes its children's stderr into its stdout).
    noise: Option<fn(&str) -> bool>,
}

impl Output {
    /// stdout and stderr written since the two cursors: `(stdout, stderr, missed, cursors)`.
    pub(crate) fn since(&self, stdout: u64, stderr: u64) -> (String, String, bool, (u64, u64)) {
        let (out, missed_out, out_at) =
            self.stdout.lock().expect("output lock poisoned").since(stdout);
        let (err, missed_err, err_at) =
            self.stderr.lock().expect("output lock poisoned").since(stderr);
        (self.clean(out), self.clean(err), missed_out || missed_err, (out_at, err_at))
    }

    /// `text` without the [`Output::noise`] lines.
    fn clean(&self, text: String) -> String {
        let Some(noise) = self.noise else { return text };
        if !text.lines().any(noise) {
            return text;
        }
        text.split_inclusive('\n')
            .filter(|line| !noise(line.trim_end_matches(['\n', '\r'])))
            .collect()
    }

    /// Adds program output that arrived another way (a debug adapter's `output` events).
    pub(crate) fn push(&self, stderr: bool, text: &str) {
        self.push_bytes(stderr, text.as_bytes());
    }

    /// Adds program output read from a stream of its own, as it came.
    pub(crate) fn push_bytes(&self, stderr: bool, bytes: &[u8]) {
        let tail = if stderr { &self.stderr } else { &self.stdout };
        tail.lock().expect("output lock poisoned").push(bytes);
    }

    /// Leaves out the lines `noise` picks when the output is read (an adapter's own lines
    /// among the program's).
    pub(crate) fn hide(&mut self, noise: fn(&str) -> bool) {
        self.noise = Some(noise);
    }

    pub(crate) fn stderr_text(&self) -> String {
        self.stderr.lock().expect("output lock poisoned").text()
    }

    /// Bytes ever written to either stream: grows while the program writes.
    pub(crate) fn written(&self) -> u64 {
        let stdout = self.stdout.lock().expect("output lock poisoned").total;
        stdout + self.stderr.lock().expect("output lock poisoned").total
    }

    /// `{stdout, stderr, truncated}` as the tools report it, without terminal colour codes.
    pub(crate) fn to_json(&self) -> Value {
        let stdout = self.stdout.lock().expect("output lock poisoned");
        let stderr = self.stderr.lock().expect("output lock poisoned");
        json!({"stdout": strip_ansi(&self.clean(stdout.text())),
               "stderr": strip_ansi(&self.clean(stderr.text())),
               "truncated": stdout.dropped || stderr.dropped})
    }
}

/// Text without terminal escape sequences (colours, cursor moves, titles): what a program
/// writes for a terminal, as an agent reads it.
pub(crate) fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\u{1b}' {
            out.push(c);
            continue;
        }
        match chars.next() {
            // CSI: parameters and intermediates, then one final byte in @..~.
            Some('[') => {
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
            }
            // OSC (a title, a hyperlink): up to BEL or ESC \.
            Some(']') => {
                while let Some(c) = chars.next() {
                    if c == '\u{7}' || (c == '\u{1b}' && chars.next_if_eq(&'\\').is_some()) {
                        break;
                    }
                }
            }
            // nF (a character set: `ESC ( B`, which terminfo's sgr0 sends): intermediates in
            // ' '..'/', then one final character.
            Some(' '..='/') => {
                for c in chars.by_ref() {
                    if !(' '..='/').contains(&c) {
                        break;
                    }
                }
            }
            // Any other escape is two characters long.
            _ => {}
        }
    }
    out
}

/// A process stopped by a signal: it has not ended, and would not by itself.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Stopped {
    pub(crate) pid: u32,
    pub(crate) signal: Option<i32>,
    /// The process debug-mcp started (the others are its descendants).
    pub(crate) program: bool,
}

impl Stopped {
    /// `{pid, signal?}`, the signal by its name.
    pub(crate) fn to_json(self) -> Value {
        let mut stopped = json!({"pid": self.pid});
        if let Some(signal) = self.signal {
            stopped["signal"] = sys::signal_name(signal).into();
        }
        stopped
    }
}

/// How a process ended.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Exit {
    pub(crate) code: Option<i32>,
    pub(crate) signal: Option<i32>,
}

impl From<ExitStatus> for Exit {
    fn from(status: ExitStatus) -> Exit {
        Exit { code: status.code(), signal: sys::exit_signal(&status) }
    }
}

impl Exit {
    /// Human words for the ending: `exit code 1`, `killed by signal 9`.
    pub(crate) fn describe(&self) -> String {
        match (self.code, self.signal) {
            (Some(code), _) => format!("exit code {code}"),
            (None, Some(signal)) => format!("killed by signal {signal}"),
            (None, None) => "unknown exit status".to_string(),
        }
    }
}

/// The environment variable every debuggee carries, `<server pid>.<n>`: its descendants inherit
/// it, so the orphans re-parented to the server (see `sys::become_subreaper`) can be told apart.
const RUN_TAG: &str = "DEBUG_MCP_RUN";
/// How often the process tree under a debuggee is looked at.
const SAMPLE_EVERY: Duration = Duration::from_millis(20);

/// Pids of the children the server owns through a `std::process::Child` (counted, since a pid
/// can be reused while its old watcher is still finishing): those are reaped by their watcher,
/// every other child of the server is an adopted orphan that [`reap_orphans`] may reap.
static OWNED: Mutex<BTreeMap<u32, usize>> = Mutex::new(BTreeMap::new());

fn owned() -> std::sync::MutexGuard<'static, BTreeMap<u32, usize>> {
    OWNED.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Runs a helper command to its end (`go list`, `cargo build`, `rustc --print`) and collects
/// its output, as `Command::output` does, with its stdin closed. It is one of the server's
/// owned children while it runs, so the reaping of adopted orphans leaves it to this wait.
pub(crate) fn output_of(command: &mut Command) -> io::Result<std::process::Output> {
    command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    // A build runs the project's own code (build scripts, `go generate`'s tools).
    without_own_variables(command);
    let mut owned = owned();
    let child = command.spawn()?;
    let pid = child.id();
    *owned.entry(pid).or_default() += 1;
    drop(owned);
    let output = child.wait_with_output();
    disown(pid);
    output
}

/// The prefix of every variable that configures debug-mcp itself.
const OWN_PREFIX: &str = "DEBUG_MCP_";

/// Keeps the server's own settings out of what `command` runs: `DEBUG_MCP_HTTP_TOKEN` holds
/// every client's token, and the rest only configure debug-mcp. A child is given back only the
/// variables its caller sets on `command` after this (the helpers' own: where to report, and
/// nothing that grants access), and those the user names in the call's `env`.
fn without_own_variables(command: &mut Command) {
    for (name, _) in std::env::vars_os() {
        if name.to_str().is_some_and(|name| name.starts_with(OWN_PREFIX)) {
            command.env_remove(name);
        }
    }
}

/// A child the server owned has been waited for: its pid may be an adopted orphan's next.
fn disown(pid: u32) {
    let mut owned = owned();
    if let Some(count) = owned.get_mut(&pid) {
        *count -= 1;
        if *count == 0 {
            owned.remove(&pid);
        }
    }
}

/// A process the debuggee started (directly or not), as seen while it ran.
#[derive(Clone, Debug)]
pub(crate) struct Descendant {
    pub(crate) process: sys::Process,
    pub(crate) parent: u32,
    pub(crate) command: String,
    /// Seen alive in two samples. A process seen once may have been caught between fork and
    /// exec, showing its parent's command line (Python's `platform` runs `uname` that way):
    /// it is killed with the rest but not reported.
    confirmed: bool,
}

/// Every process a debuggee started, as far as they can be seen: its process tree sampled
/// every [`SAMPLE_EVERY`] while it runs (a process not seen alive in two samples, about 40 ms,
/// is killed but not reported), and
/// the orphans that carry its [`RUN_TAG`]. Linux only; empty elsewhere.
struct Tree {
    tag: String,
    seen: Arc<Mutex<BTreeMap<u32, Descendant>>>,
    stop: Option<Sender<()>>,
    sampler: Option<JoinOnDrop>,
}

impl Tree {
    fn watch(root: u32, tag: String) -> Tree {
        let seen: Arc<Mutex<BTreeMap<u32, Descendant>>> = Arc::default();
        let (stop, stopped) = crossbeam_channel::bounded::<()>(0);
        let sampler = sys::Process::now(root).map(|root| {
            let seen = seen.clone();
            JoinOnDrop::spawn(&format!("tree-{}", root.pid), move || loop {
                sample(root, &seen);
                if stopped.recv_timeout(SAMPLE_EVERY) != Err(RecvTimeoutError::Timeout) {
                    return;
                }
            })
        });
        Tree { tag, seen, stop: Some(stop), sampler }
    }

    fn seen(&self) -> std::sync::MutexGuard<'_, BTreeMap<u32, Descendant>> {
        self.seen.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Kills every descendant still running: those sampled, the orphans with our tag that the
    /// server adopted, and their own descendants; then reaps the ones re-parented to us.
    fn kill_all(&self) {
        let server = sys::this_process();
        let deadline = Instant::now() + Duration::from_secs(1);
        let mut victims: BTreeSet<sys::Process> = BTreeSet::new();
        loop {
            let mut frontier: Vec<sys::Process> =
                self.seen().values().map(|d| d.process).filter(sys::Process::alive).collect();
            if let Some(server) = server {
                let owned = owned();
                let adopted: Vec<u32> =
                    server.children().into_iter().filter(|p| !owned.contains_key(p)).collect();
                drop(owned);
                frontier.extend(
                    adopted
                        .into_iter()
                        .filter_map(sys::Process::now)
                        .filter(|p| p.has_env(&self.tag)),
                );
            }
            let mut found = false;
            while let Some(process) = frontier.pop() {
                if process.alive() {
                    process.kill();
                    found |= victims.insert(process);
                }
                frontier.extend(process.children().into_iter().filter_map(sys::Process::now));
            }
            if !found || Instant::now() > deadline {
                break;
            }
        }
        // Those that ended by themselves are waited for too: one that became a zombie of
        // ours just now would otherwise wait for the next `reap_orphans` tick.
        victims.extend(self.seen().values().map(|d| d.process));
        reap_victims(&victims, deadline);
    }
}

/// Reaps the adopted orphans (children of the server it does not own through a `Child`) that
/// have ended.
pub(crate) fn reap_orphans() {
    let Some(server) = sys::this_process() else { return };
    let owned = owned();
    for pid in server.children() {
        if !owned.contains_key(&pid) {
            sys::reap(pid);
        }
    }
}

/// Reaps the `victims` that are (or become, as their parents die) children of the server,
/// until none is left or `deadline` passes; and any other adopted orphan that has ended.
fn reap_victims(victims: &BTreeSet<sys::Process>, deadline: Instant) {
    loop {
        reap_orphans();
        // A victim is left while its pid is still its own: running, or a zombie not reaped.
        let left = victims.iter().any(|v| sys::Process::now(v.pid) == Some(*v));
        if !left || Instant::now() > deadline {
            return;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Adds the children of `root` and of every live process seen before, recursively. The
/// command of a live process is read again each time: one seen between fork and exec still
/// shows its parent's.
fn sample(root: sys::Process, seen: &Mutex<BTreeMap<u32, Descendant>>) {
    let mut seen = seen.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut frontier = vec![root];
    for known in seen.values_mut().filter(|d| d.process.alive()) {
        let command = known.process.command();
        if !command.starts_with('[') {
            known.command = command;
        }
        known.confirmed = true;
        frontier.push(known.process);
    }
    while let Some(parent) = frontier.pop() {
        for pid in parent.children() {
            let Some(child) = sys::Process::now(pid) else { continue };
            if seen.get(&pid).is_some_and(|d| d.process == child) {
                continue;
            }
            let command = child.command();
            let descendant =
                Descendant { process: child, parent: parent.pid, command, confirmed: false };
            seen.insert(pid, descendant);
            frontier.push(child);
        }
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        self.stop.take();
        self.sampler.take();
    }
}

/// A running (or finished) child process in its own process group.
pub(crate) struct Debuggee {
    pid: u32,
    group: sys::ProcessGroup,
    /// One message when the process exits; `exit` caches it.
    exited: Receiver<Exit>,
    exit: Option<Exit>,
    /// The signal that stopped it (SIGSTOP, SIGTTIN…), 0 while it runs: its watcher's.
    stop: Arc<AtomicI32>,
    /// Its processes a signal had stopped when it was killed.
    stopped_when_killed: Vec<Stopped>,
    /// Killed, with its group and every process of its tree: nothing is left to kill.
    killed: bool,
    /// stderr lines the caller's predicate claimed (for Node: the inspector's own lines).
    notices: Receiver<String>,
    output: Output,
    watcher: Option<JoinOnDrop>,
    drains: Vec<(JoinOnDrop, Receiver<()>)>,
    tree: Tree,
    /// The program as spawned (`node`), to tell its own kind among its descendants.
    program: String,
    /// A directory of the program's own (a browser's throwaway profile), removed once the
    /// program is gone.
    scratch: Option<PathBuf>,
    /// What lives as long as the process (readers of its program's output), let go once it
    /// was killed.
    companion: Option<Box<dyn Send>>,
}

impl Debuggee {
    /// Spawns `spec` in a new process group with stdin closed and stdout/stderr captured.
    /// `claim` picks the stderr lines that are the runtime's rather than the program's.
    pub(crate) fn spawn(spec: &Spec, claim: fn(&str) -> bool) -> Result<Debuggee, SpawnError> {
        Ok(Debuggee::spawn_with(spec, claim, false, &[])?.0)
    }

    /// [`Debuggee::spawn`], the process given each `(ours, its)` descriptor pair of `fds`
    /// (connections made for it: [`sys::pass_fds`]).
    pub(crate) fn spawn_inheriting(
        spec: &Spec,
        claim: fn(&str) -> bool,
        fds: &[(RawFd, RawFd)],
    ) -> Result<Debuggee, SpawnError> {
        Ok(Debuggee::spawn_with(spec, claim, false, fds)?.0)
    }

    /// Spawns a debug adapter: its stdin and stdout are the protocol and come back to the
    /// caller; its stderr is kept like a program's.
    pub(crate) fn spawn_adapter(
        spec: &Spec,
    ) -> Result<(Debuggee, ChildStdin, ChildStdout), SpawnError> {
        let (debuggee, pipes) = Debuggee::spawn_with(spec, |_| false, true, &[])?;
        let (stdin, stdout) = pipes.expect("asked for the protocol pipes");
        Ok((debuggee, stdin, stdout))
    }

    fn spawn_with(
        spec: &Spec,
        claim: fn(&str) -> bool,
        protocol: bool,
        fds: &[(RawFd, RawFd)],
    ) -> Result<(Debuggee, Option<(ChildStdin, ChildStdout)>), SpawnError> {
        let mut command = Command::new(&spec.program);
        let fed = !protocol && spec.stdin.is_some();
        let stdin = if protocol || fed { Stdio::piped() } else { Stdio::null() };
        command.args(&spec.args).stdin(stdin).stdout(Stdio::piped()).stderr(Stdio::piped());
        if let Some(cwd) = &spec.cwd {
            command.current_dir(cwd);
        }
        without_own_variables(&mut command);
        for name in &spec.env_remove {
            command.env_remove(name);
        }
        command.envs(spec.env.iter().map(|(k, v)| (k, v)));
        static RUNS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let run = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let tag = format!("{}.{run}", std::process::id());
        command.env(RUN_TAG, &tag);
        sys::new_session(&mut command);
        if !fds.is_empty() {
            sys::pass_fds(&mut command, fds);
        }
        // Registered before anything can reap it: see `OWNED`.
        let mut owned = owned();
        let mut child = command.spawn().map_err(|e| match e.kind() {
            io::ErrorKind::NotFound => SpawnError::NotFound(spec.program.clone()),
            _ => SpawnError::Other(spec.program.clone(), e),
        })?;
        let pid = child.id();
        *owned.entry(pid).or_default() += 1;
        drop(owned);
        // Before the watcher can reap it: see `ProcessGroup`.
        let group = sys::ProcessGroup::of(pid);
        let output = Output { noise: Some(claim), ..Output::default() };
        let (notice_tx, notices) = crossbeam_channel::unbounded();
        let stdout = child.stdout.take().expect("stdout was piped");
        let stderr = child.stderr.take().expect("stderr was piped");
        let mut drains = vec![drain_stderr(pid, stderr, output.stderr.clone(), claim, notice_tx)];
        if let (true, Some(text)) = (fed, &spec.stdin) {
            let input = child.stdin.take().expect("stdin was piped");
            drains.push(feed_stdin(pid, input, text.clone()));
        }
        let pipes = if protocol {
            Some((child.stdin.take().expect("stdin was piped"), stdout))
        } else {
            drains.push(drain_stdout(pid, stdout, output.stdout.clone()));
            None
        };
        let (exit_tx, exited) = crossbeam_channel::bounded(1);
        let stop = Arc::new(AtomicI32::new(0));
        let stop_seen = stop.clone();
        let watcher =
            JoinOnDrop::spawn(&format!("wait-{pid}"), move || watch(child, &exit_tx, &stop_seen));
        let tree = Tree::watch(pid, format!("{RUN_TAG}={tag}"));
        let debuggee = Debuggee {
            pid,
            group,
            exited,
            exit: None,
            stop,
            stopped_when_killed: Vec::new(),
            killed: false,
            notices,
            output,
            watcher: Some(watcher),
            drains,
            tree,
            program: spec.program.clone(),
            scratch: None,
            companion: None,
        };
        Ok((debuggee, pipes))
    }

    /// Keeps as the program's output only what is pushed to it ([`Output::push`]): what the
    /// process itself writes is not the program's (a browser's logs, beside a page's console).
    pub(crate) fn output_pushed_only(&mut self) {
        self.output = Output::default();
    }

    /// Removes `dir` (made by [`crate::scratch::private_dir`]) once the program is gone.
    pub(crate) fn remove_when_gone(&mut self, dir: PathBuf) {
        self.scratch = Some(dir);
    }

    /// Receives the exit once; select on it, then call [`Debuggee::record_exit`].
    pub(crate) fn exited(&self) -> &Receiver<Exit> {
        &self.exited
    }

    pub(crate) fn record_exit(&mut self, exit: Exit) {
        self.exit = Some(exit);
    }

    pub(crate) fn pid(&self) -> u32 {
        self.pid
    }

    pub(crate) fn notices(&self) -> &Receiver<String> {
        &self.notices
    }

    pub(crate) fn output(&self) -> &Output {
        &self.output
    }

    /// The exit, if it happened, without blocking.
    pub(crate) fn try_exit(&mut self) -> Option<Exit> {
        if self.exit.is_none() {
            self.exit = self.exited.try_recv().ok();
        }
        self.exit
    }

    /// Waits up to `grace` for the process to end by itself; kills its group if it lingers.
    /// Either way the group is gone afterwards and the exit is known.
    pub(crate) fn finish(&mut self, grace: Duration) -> Exit {
        self.finish_by(grace, None)
    }

    /// [`Debuggee::finish`], but a process a signal stopped in that time (it has not ended,
    /// and may go on when continued) is waited for until `stopped_until`, not killed at once.
    pub(crate) fn finish_by(&mut self, grace: Duration, stopped_until: Option<Instant>) -> Exit {
        if self.try_exit().is_none() {
            if let Ok(exit) = self.exited.recv_timeout(grace) {
                self.exit = Some(exit);
            }
        }
        let until = stopped_until.filter(|_| self.exit.is_none() && self.program_stopped());
        if let Some(until) = until {
            crate::log::debug(format_args!("pid {} is stopped by a signal: waiting", self.pid));
            let left = until.saturating_duration_since(Instant::now());
            if let Ok(exit) = self.exited.recv_timeout(left) {
                self.exit = Some(exit);
            }
        }
        self.kill()
    }

    /// Keeps `companion` until the process is killed (its descendants with it).
    pub(crate) fn keep(&mut self, companion: Box<dyn Send>) {
        self.companion = Some(companion);
    }

    /// Kills the whole process group at once and waits for the leader's exit. Processes the
    /// program started in its group go too: nothing the debuggee started is left behind.
    pub(crate) fn kill(&mut self) -> Exit {
        if let (true, Some(exit)) = (self.killed, self.exit) {
            return exit;
        }
        if self.exit.is_none() {
            self.stopped_when_killed = self.stopped();
        }
        self.group.kill();
        self.tree.kill_all();
        self.killed = true;
        self.companion.take();
        if let Some(exit) = self.try_exit() {
            return exit;
        }
        // SIGKILL cannot be caught; the watcher reaps the leader right away.
        let exit = self
            .exited
            .recv_timeout(Duration::from_secs(5))
            .unwrap_or(Exit { code: None, signal: Some(sys::SIGKILL) });
        self.exit = Some(exit);
        exit
    }

    /// Its processes that are stopped by a signal (itself, or a descendant seen), not ended:
    /// `{pid, signal?}` each, the signal when known (the process debug-mcp started). Once it
    /// was killed: those stopped then.
    pub(crate) fn stopped(&self) -> Vec<Stopped> {
        if self.exit.is_some() {
            return self.stopped_when_killed.clone();
        }
        let mut stopped = Vec::new();
        if self.program_stopped() {
            let signal = Some(self.stop.load(Ordering::Relaxed)).filter(|&s| s != 0);
            stopped.push(Stopped { pid: self.pid, signal, program: true });
        }
        for descendant in self.tree.seen().values().filter(|d| d.confirmed) {
            if descendant.process.is_stopped() {
                let pid = descendant.process.pid;
                stopped.push(Stopped { pid, signal: None, program: false });
            }
        }
        stopped
    }

    /// Whether the process debug-mcp started is stopped by a signal.
    fn program_stopped(&self) -> bool {
        sys::Process::now(self.pid).is_some_and(|p| p.is_stopped())
    }

    /// The processes the program started, as far as they were seen (none on systems other
    /// than Linux), below `pid` (the program's, when the debuggee is a debug adapter) or below
    /// the debuggee itself.
    pub(crate) fn descendants(&self, pid: Option<u32>) -> Vec<Descendant> {
        let seen = self.tree.seen();
        let top = pid.unwrap_or(self.pid);
        let below = |d: &Descendant| {
            let mut parent = d.parent;
            // Bounded: a parent chain in a snapshot of pids cannot be longer than the snapshot.
            for _ in 0..=seen.len() {
                if parent == top {
                    return true;
                }
                match seen.get(&parent) {
                    Some(next) => parent = next.parent,
                    None => return false,
                }
            }
            false
        };
        let mut found: Vec<Descendant> = seen
            .values()
            .filter(|d| d.confirmed && d.process.pid != top && below(d))
            .cloned()
            .collect();
        // Those that run the same program as the debuggee (the test files of a runner, forks)
        // first, before the shells and tools it ran on the way; else in pid order.
        let program = |command: &str| {
            let first = command.split(' ').next().unwrap_or_default();
            std::path::Path::new(first).file_name().map(|n| n.to_os_string())
        };
        let own = program(seen.get(&top).map_or(self.program.as_str(), |d| d.command.as_str()));
        found.sort_by_key(|d| program(&d.command) != own);
        found
    }

    /// Waits (briefly) until both pipes reached end of file, so the output tails hold
    /// everything the program wrote. Call after the process group is gone.
    /// A run's end: the program killed when it `timed_out`, else let go of with its own end
    /// (what it started goes with it); its output read to the last byte.
    pub(crate) fn end_run(&mut self, timed_out: bool) -> Exit {
        let exit = match timed_out {
            true => self.kill(),
            false => self.finish(Duration::ZERO),
        };
        self.settle_output();
        exit
    }

    pub(crate) fn settle_output(&self) -> bool {
        let deadline = Instant::now() + DRAIN_GRACE;
        self.drains.iter().all(|(_, done)| {
            let left = deadline.saturating_duration_since(Instant::now());
            !matches!(done.recv_timeout(left), Err(RecvTimeoutError::Timeout))
        })
    }
}

/// How long to wait for the output pipes to close once the process group is gone. A process that
/// Writes `text` to the program's stdin, then closes it: the program reads it, then end of
/// file. A program that never reads it ends the write when it exits (the pipe breaks).
fn feed_stdin(pid: u32, mut input: ChildStdin, text: String) -> (JoinOnDrop, Receiver<()>) {
    let (done_tx, done) = crossbeam_channel::bounded(1);
    let thread = JoinOnDrop::spawn(&format!("stdin-{pid}"), move || {
        let _ = io::Write::write_all(&mut input, text.as_bytes());
        drop(input);
        let _ = done_tx.send(());
    });
    (thread, done)
}

/// left the group (setsid) may hold them open for ever.
const DRAIN_GRACE: Duration = Duration::from_millis(500);

impl Drop for Debuggee {
    fn drop(&mut self) {
        self.kill();
        self.watcher.take();
        let settled = self.settle_output();
        for (thread, _) in self.drains.drain(..) {
            if settled || thread.is_finished() {
                drop(thread);
            } else {
                crate::log::warn(format_args!(
                    "a process outside group {} still holds the debuggee's output pipe",
                    self.pid
                ));
                thread.detach();
            }
        }
        if let Some(dir) = self.scratch.take() {
            if let Err(e) = std::fs::remove_dir_all(&dir) {
                crate::log::warn(format_args!("cannot remove {}: {e}", dir.display()));
            }
        }
    }
}

/// Waits for the child's end, noting each stop and continue in `stop` (the signal that
/// stopped it, 0 while it runs). `child` is only held: std's own wait would not see stops.
fn watch(child: Child, exit_tx: &Sender<Exit>, stop: &AtomicI32) {
    let exit = loop {
        match sys::wait_child(child.id()) {
            sys::Waited::Exited(status) => break Exit::from(status),
            sys::Waited::Stopped(signal) => stop.store(signal, Ordering::Relaxed),
            sys::Waited::Continued => stop.store(0, Ordering::Relaxed),
            sys::Waited::Gone => break Exit { code: None, signal: None },
        }
    };
    disown(child.id());
    let _ = exit_tx.send(exit);
}

fn drain_stdout(
    pid: u32,
    mut pipe: ChildStdout,
    tail: Arc<Mutex<Tail>>,
) -> (JoinOnDrop, Receiver<()>) {
    let (done_tx, done) = crossbeam_channel::bounded(1);
    let thread = JoinOnDrop::spawn(&format!("stdout-{pid}"), move || {
        let mut buffer = vec![0u8; 16 * 1024];
        loop {
            match pipe.read(&mut buffer) {
                Ok(0) => break,
                Ok(n) => tail.lock().expect("output lock poisoned").push(&buffer[..n]),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            }
        }
        let _ = done_tx.send(());
    });
    (thread, done)
}

/// Lines of stderr longer than this are cut into pieces; the inspector's lines are short.
const MAX_STDERR_LINE: usize = 16 * 1024;

fn drain_stderr(
    pid: u32,
    mut pipe: ChildStderr,
    tail: Arc<Mutex<Tail>>,
    claim: fn(&str) -> bool,
    notices: Sender<String>,
) -> (JoinOnDrop, Receiver<()>) {
    let (done_tx, done) = crossbeam_channel::bounded(1);
    let thread = JoinOnDrop::spawn(&format!("stderr-{pid}"), move || {
        let mut buffer = vec![0u8; 16 * 1024];
        let mut line: Vec<u8> = Vec::new();
        let emit = |line: &mut Vec<u8>| {
            let text = String::from_utf8_lossy(line);
            let trimmed = text.trim_end_matches(['\n', '\r']);
            if claim(trimmed) {
                let _ = notices.send(trimmed.to_string());
            } else {
                tail.lock().expect("output lock poisoned").push(line);
            }
            line.clear();
        };
        loop {
            let n = match pipe.read(&mut buffer) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            };
            for &byte in &buffer[..n] {
                line.push(byte);
                if byte == b'\n' || line.len() >= MAX_STDERR_LINE {
                    emit(&mut line);
                }
            }
        }
        if !line.is_empty() {
            emit(&mut line);
        }
        let _ = done_tx.send(());
    });
    (thread, done)
}

#[cfg(test)]
mod tests {

    use super::*;

    #[test]
    fn terminal_codes_are_left_out() {
        for (raw, plain) in [
            ("\u{1b}[32m✓\u{1b}[39m passed", "✓ passed"),
            ("\u{1b}[1;31mred\u{1b}[0m\n", "red\n"),
            ("\u{1b}]8;;http://x\u{7}link\u{1b}]8;;\u{7}", "link"),
            ("\u{1b}]0;title\u{1b}\\text", "text"),
            ("\u{1b}[2K\rprogress", "\rprogress"),
            // libtest on a pty (lldb-dap runs programs on one): sgr0 is `ESC ( B ESC [m`.
            ("ok\u{1b}(B\u{1b}[m\n", "ok\n"),
            ("plain", "plain"),
        ] {
            assert_eq!(strip_ansi(raw), plain, "{raw:?}");
        }
    }

    #[test]
    fn tail_keeps_the_end_and_says_it_cut() {
        let mut tail = Tail::default();
        tail.push(b"hello ");
        assert_eq!((tail.text().as_str(), tail.dropped), ("hello ", false));
        let big = "é".repeat(TAIL_BYTES); // two bytes each
        tail.push(big.as_bytes());
        tail.push(b"end");
        let text = tail.text();
        assert!(tail.dropped);
        assert!(text.ends_with("ééend"), "{}", &text[text.len() - 10..]);
        assert!(!text.contains('\u{FFFD}'));
        assert_eq!(text.len(), TAIL_BYTES - (TAIL_BYTES - 3) % 2);
    }
}
