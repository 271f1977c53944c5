//! Everything specific to Unix lives here: process groups, signals, waiting for stdin to become
//! readable, and the TCP_QUICKACK socket option. A Windows port replaces this one file.
//!
//! Nothing else in the crate calls `libc` directly.

use std::io;
use std::net::TcpStream;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, ExitStatus};
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;

/// Makes the spawned process the leader of a new session, and so of a new process group: the
/// debuggee and every process it starts can be killed together with [`ProcessGroup`], a Ctrl-C
/// in the server's terminal reaches the server (which cleans up) rather than the debuggee
/// directly, and the debuggee has no controlling terminal. Opening `/dev/tty` fails at once
/// (ENXIO) instead of writing to the client's terminal, or stopping the program with SIGTTIN
/// when it reads there.
pub(crate) fn new_session(command: &mut Command) {
    // SAFETY: setsid is async-signal-safe. The child of fork(2) is never a group leader, so it
    // cannot fail (std's own `process_group` would have made it one: it is not used).
    unsafe {
        command.pre_exec(|| match libc::setsid() {
            -1 => Err(io::Error::last_os_error()),
            _ => Ok(()),
        });
    }
    die_with_parent(command);
}

/// On Linux, the kernel kills the child when the thread that spawned it dies: the safety net
/// for a server killed with SIGKILL (clients escalate to it), which cannot clean up. Each
/// debuggee is spawned by the worker or session thread that owns it, which outlives it anyway.
fn die_with_parent(command: &mut Command) {
    #[cfg(target_os = "linux")]
    {
        let parent = std::process::id() as libc::pid_t;
        // SAFETY: prctl, getppid, kill and syscall are async-signal-safe; nothing is allocated.
        unsafe {
            command.pre_exec(move || {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                // The parent may have died before prctl took effect.
                if libc::getppid() != parent {
                    libc::kill(libc::getpid(), libc::SIGKILL);
                }
                // Descriptors the server inherited without close-on-exec (its client's, a
                // build tool's jobserver) are not the debuggee's business: closed at exec
                // (close_range with CLOSE_RANGE_CLOEXEC, Linux 5.11; older kernels refuse it
                // and nothing changes). As a raw syscall, so glibc 2.34 is not required.
                const CLOSE_RANGE_CLOEXEC: libc::c_uint = 1 << 2;
                libc::syscall(
                    libc::SYS_close_range,
                    3 as libc::c_uint,
                    libc::c_uint::MAX,
                    CLOSE_RANGE_CLOEXEC,
                );
                Ok(())
            });
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = command;
}

/// The child `command` starts has each `(from, to)` of ours as its descriptor `to`, kept open
/// across its exec (after the descriptors closed there by `new_session`): connections made for
/// it alone (`(fd, fd)` keeps one where it is).
pub(crate) fn pass_fds(command: &mut Command, fds: &[(RawFd, RawFd)]) {
    const MOST: usize = 4;
    assert!(fds.len() <= MOST, "at most {MOST} descriptors are passed");
    let mut pairs = [(-1, -1); MOST];
    pairs[..fds.len()].copy_from_slice(fds);
    let count = fds.len();
    // Each source is first copied above every target, so that placing one never closes
    // another's source.
    let above = fds.iter().map(|&(_, to)| to).max().unwrap_or(0) + 1;
    // SAFETY: fcntl, dup2 and close are async-signal-safe; nothing is allocated.
    unsafe {
        command.pre_exec(move || {
            let mut copies = [-1; MOST];
            for (copy, &(from, _)) in copies.iter_mut().zip(&pairs[..count]) {
                *copy = libc::fcntl(from, libc::F_DUPFD_CLOEXEC, above);
                if *copy == -1 {
                    return Err(io::Error::last_os_error());
                }
            }
            for (&copy, &(_, to)) in copies.iter().zip(&pairs[..count]) {
                // dup2 leaves `to` open across exec.
                if libc::dup2(copy, to) == -1 {
                    return Err(io::Error::last_os_error());
                }
                libc::close(copy);
            }
            Ok(())
        });
    }
}

pub(crate) const SIGKILL: i32 = libc::SIGKILL;

/// Asks a running Node process to open its inspector (on 127.0.0.1:9229), as `node inspect -p`
/// does: Node listens for SIGUSR1 for that.
pub(crate) fn open_inspector(pid: u32) -> io::Result<()> {
    let pid = libc::pid_t::try_from(pid).map_err(|_| io::Error::other("pid out of range"))?;
    // SAFETY: kill(2) sends a signal; it touches no memory of ours.
    if unsafe { libc::kill(pid, libc::SIGUSR1) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// What a wait for a child of ours saw.
pub(crate) enum Waited {
    Exited(ExitStatus),
    /// Stopped by this signal (SIGSTOP, SIGTSTP, SIGTTIN, SIGTTOU).
    Stopped(i32),
    Continued,
    /// Not a child of ours (any more).
    Gone,
}

/// Waits for child `pid` to end, stop or continue (waitpid(2) with WUNTRACED and WCONTINUED).
pub(crate) fn wait_child(pid: u32) -> Waited {
    use std::os::unix::process::ExitStatusExt;
    let Ok(pid) = libc::pid_t::try_from(pid) else { return Waited::Gone };
    loop {
        let mut status = 0;
        // SAFETY: waitpid(2) writes the status into a local.
        let n = unsafe { libc::waitpid(pid, &mut status, libc::WUNTRACED | libc::WCONTINUED) };
        if n == -1 {
            match io::Error::last_os_error().kind() {
                io::ErrorKind::Interrupted => continue,
                _ => return Waited::Gone,
            }
        }
        return match () {
            () if libc::WIFSTOPPED(status) => Waited::Stopped(libc::WSTOPSIG(status)),
            () if libc::WIFCONTINUED(status) => Waited::Continued,
            () => Waited::Exited(ExitStatus::from_raw(status)),
        };
    }
}

/// The real-time signal a Python program of ours answers with where its threads are (the
/// tracer's handler; `python/trace.py`). Few programs use real-time signals.
pub(crate) fn hang_signal() -> i32 {
    libc::SIGRTMIN() + 5
}

/// Sends `signal` to process `pid`; true when it was sent.
pub(crate) fn signal(pid: u32, signal: i32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else { return false };
    // SAFETY: kill(2) sends a signal; it touches no memory of ours.
    unsafe { libc::kill(pid, signal) == 0 }
}

/// The number of a signal by its name (`SIGABRT`).
pub(crate) fn signal_number(name: &str) -> Option<i32> {
    (1..32).find(|&n| signal_name(n) == name)
}

/// A signal's name (`SIGSTOP`), or its number.
pub(crate) fn signal_name(signal: i32) -> String {
    let name = match signal {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGSTOP => "SIGSTOP",
        libc::SIGTSTP => "SIGTSTP",
        libc::SIGTTIN => "SIGTTIN",
        libc::SIGTTOU => "SIGTTOU",
        _ => return signal.to_string(),
    };
    name.to_string()
}

/// The signal that ended a process, if one did.
pub(crate) fn exit_signal(status: &ExitStatus) -> Option<i32> {
    status.signal()
}

/// Limits glibc to two malloc arenas, and keeps allocations of 1 MiB and more in their own
/// mappings. By default every thread that allocates may get an arena of its own, and freed
/// memory stays in them; and once a large block is freed glibc raises its mmap threshold, so
/// the next large source map comes from the heap and is never given back. A server with a
/// thread per call would hold several times the memory it uses. A no-op on other C libraries.
pub(crate) fn limit_malloc_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets allocator tunables; called before any thread starts.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 2);
        libc::mallopt(libc::M_MMAP_THRESHOLD, 1 << 20);
    }
}

/// Sends SIGKILL to the process group led by `pid`. A group that no longer exists is not an
/// error: the point is that nothing of it remains.
fn kill_group(pid: u32) {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return;
    };
    if pid <= 1 {
        return;
    }
    // SAFETY: kill(2) with a negative pid signals a process group; it touches no memory of ours.
    unsafe {
        libc::kill(-pid, libc::SIGKILL);
    }
}

/// A process group to kill later, led by a process that may be gone by then: reaped by our
/// watcher, or not ours to reap (debugpy's launcher starts a Python program). Its pid may then
/// be recycled, and pids wrap quickly (`pid_max` is 32768 on many machines): killing the
/// group blindly could kill a stranger's. The leader's start time, read while it is alive
/// (or a zombie), tells the group apart from a newcomer that got the same pid.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ProcessGroup {
    pid: u32,
    started: Option<u64>,
}

impl ProcessGroup {
    pub(crate) fn of(pid: u32) -> ProcessGroup {
        ProcessGroup { pid, started: start_time(pid) }
    }

    /// The leader's pid.
    pub(crate) fn pid(&self) -> u32 {
        self.pid
    }

    /// Kills what is left of the group, unless its pid now belongs to another process. (While
    /// any member of the old group lives, the kernel does not hand its id out again.)
    pub(crate) fn kill(&self) {
        match start_time(self.pid) {
            Some(now) if Some(now) != self.started => {}
            _ => kill_group(self.pid),
        }
    }
}

/// A process's start time (clock ticks after boot: field 22 of /proc/<pid>/stat).
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses: count after the last ')'.
    let after_name = &stat[stat.rfind(')')? + 1..];
    after_name.split_whitespace().nth(19)?.parse().ok()
}

/// Makes this process the reaper of its orphaned descendants (Linux): a process a debuggee
/// starts and abandons (a daemon, `spawn(..., {detached: true})`, `setsid`) is re-parented to
/// debug-mcp rather than to init, so it can still be found, killed and reaped. Elsewhere such
/// processes escape (docs/limits.md).
pub(crate) fn become_subreaper() {
    #[cfg(target_os = "linux")]
    // SAFETY: prctl with integer arguments only.
    unsafe {
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1);
    }
}

/// One process, told apart from a later one with the same pid by its start time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Process {
    pub(crate) pid: u32,
    pub(crate) started: u64,
}

impl Process {
    /// The process with this pid now, if there is one.
    pub(crate) fn now(pid: u32) -> Option<Process> {
        Some(Process { pid, started: start_time(pid)? })
    }

    /// Whether it still runs (a zombie does not).
    pub(crate) fn alive(&self) -> bool {
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{}/stat", self.pid)) else {
            return false;
        };
        let Some(after_name) = stat.rfind(')').map(|at| &stat[at + 1..]) else { return false };
        let mut fields = after_name.split_whitespace();
        let state = fields.next();
        let started = fields.nth(18).and_then(|t| t.parse().ok());
        state != Some("Z") && state != Some("X") && started == Some(self.started)
    }

    /// Whether it is stopped by a signal (`T` in /proc; not `t`, a debugger's stop).
    pub(crate) fn is_stopped(&self) -> bool {
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{}/stat", self.pid)) else {
            return false;
        };
        let state = stat.rfind(')').and_then(|at| stat[at + 1..].split_whitespace().next());
        state == Some("T") && start_time(self.pid) == Some(self.started)
    }

    /// SIGKILL, unless the pid now belongs to another process.
    pub(crate) fn kill(&self) {
        if start_time(self.pid) == Some(self.started) {
            if let Ok(pid) = libc::pid_t::try_from(self.pid) {
                // SAFETY: kill(2) signals one process; it touches no memory of ours.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                }
            }
        }
    }

    /// Its children, whichever of its threads started them (`/proc/PID/task/*/children`,
    /// Linux 3.5 and later). Empty when it is gone, or on other systems.
    pub(crate) fn children(&self) -> Vec<u32> {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{}/task", self.pid)) else {
            return Vec::new();
        };
        let mut children = Vec::new();
        for task in tasks.flatten() {
            if let Ok(text) = std::fs::read_to_string(task.path().join("children")) {
                children.extend(text.split_whitespace().filter_map(|p| p.parse::<u32>().ok()));
            }
        }
        children
    }

    /// Whether its environment holds `entry` (`NAME=value`), as it was when it started.
    pub(crate) fn has_env(&self, entry: &str) -> bool {
        let Ok(environ) = std::fs::read(format!("/proc/{}/environ", self.pid)) else {
            return false;
        };
        environ.split(|&b| b == 0).any(|e| e == entry.as_bytes())
    }

    /// Its command line, words joined by spaces; for a process that has just ended (whose
    /// command line is gone) its name in brackets, as `ps` shows it: `[sh]`.
    pub(crate) fn command(&self) -> String {
        let cmdline = std::fs::read(format!("/proc/{}/cmdline", self.pid)).unwrap_or_default();
        let words: Vec<String> = cmdline
            .split(|&b| b == 0)
            .filter(|w| !w.is_empty())
            .map(|w| String::from_utf8_lossy(w).into_owned())
            .collect();
        if !words.is_empty() {
            return words.join(" ");
        }
        let name = std::fs::read_to_string(format!("/proc/{}/comm", self.pid)).unwrap_or_default();
        format!("[{}]", name.trim_end())
    }
}

/// The server itself, as a [`Process`] (for the orphans re-parented to it).
pub(crate) fn this_process() -> Option<Process> {
    Process::now(std::process::id())
}

/// Collects the exit status of `pid` if it is a child of ours that has ended. True when there
/// is nothing more to wait for (reaped now, or not our child).
pub(crate) fn reap(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else { return true };
    let mut status = 0;
    // SAFETY: waitpid(2) with WNOHANG writes the status into a local.
    let n = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
    n != 0
}

/// This process's effective user id: the owner of what it creates.
pub(crate) fn effective_uid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// This user's home directory as the user database has it (`getpwuid_r`), which is where Go's
/// `os/user` looks, whatever `$HOME` says.
pub(crate) fn user_home() -> Option<std::path::PathBuf> {
    use std::ffi::CStr;
    use std::os::unix::ffi::OsStrExt;
    let mut buffer = vec![0 as libc::c_char; 16 * 1024];
    // SAFETY: an all-zero passwd is a valid value of the struct; getpwuid_r fills it in.
    let mut entry: libc::passwd = unsafe { std::mem::zeroed() };
    let mut found: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: every pointer is to a live local of the size given; the strings it sets point
    // into `buffer`, read before it is dropped.
    let status = unsafe {
        libc::getpwuid_r(libc::geteuid(), &mut entry, buffer.as_mut_ptr(), buffer.len(), &mut found)
    };
    if status != 0 || found.is_null() || entry.pw_dir.is_null() {
        return None;
    }
    // SAFETY: pw_dir is a NUL-terminated string in `buffer` (checked not null above).
    let dir = unsafe { CStr::from_ptr(entry.pw_dir) };
    Some(std::ffi::OsStr::from_bytes(dir.to_bytes()).into())
}

/// Whether a process with this pid exists (it may belong to another user: `kill` then
/// answers EPERM, which still says it runs).
pub(crate) fn pid_exists(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else { return false };
    // SAFETY: kill(2) with signal 0 sends nothing; it only checks the pid.
    let answered = unsafe { libc::kill(pid, 0) };
    answered == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// 64 unpredictable bits, from the system's random source.
pub(crate) fn random() -> u64 {
    use std::io::Read;
    let mut bytes = [0u8; 8];
    let read = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut bytes));
    if read.is_ok() {
        return u64::from_ne_bytes(bytes);
    }
    // Without /dev/urandom (a bare chroot): std's hasher keys come from the system's random
    // source too.
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u32(std::process::id());
    hasher.finish()
}

/// Whether this process runs as root (Chromium's sandbox refuses root without `--no-sandbox`).
pub(crate) fn is_root() -> bool {
    effective_uid() == 0
}

/// Makes a named pipe (FIFO) at `path` that only this user may open.
pub(crate) fn make_fifo(path: &std::path::Path) -> io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL byte in the path"))?;
    // SAFETY: mkfifo(3) reads the NUL-terminated path we own.
    match unsafe { libc::mkfifo(path.as_ptr(), 0o600) } {
        0 => Ok(()),
        _ => Err(io::Error::last_os_error()),
    }
}

/// The write end of the self-pipe the signal handler writes to; -1 until [`Signals::install`].
static SIGNAL_PIPE: AtomicI32 = AtomicI32::new(-1);

extern "C" fn on_signal(signal: libc::c_int) {
    let fd = SIGNAL_PIPE.load(Ordering::Relaxed);
    if fd >= 0 {
        let byte = signal as u8;
        // SAFETY: write(2) is async-signal-safe; the buffer is a local byte.
        unsafe {
            libc::write(fd, std::ptr::addr_of!(byte).cast(), 1);
        }
    }
}

/// SIGTERM and SIGINT, turned into bytes on a pipe so that a thread can forward them to the main
/// loop as channel messages (a signal handler can do almost nothing else safely).
pub(crate) struct Signals {
    read: OwnedFd,
    write: OwnedFd,
}

/// A pipe whose ends the debuggee does not inherit; optionally non-blocking. On Linux both
/// flags are set atomically by pipe2(2): with pipe(2) and then fcntl(2), a debuggee spawned
/// by another thread in between would inherit the pipe.
fn pipe(nonblocking: bool) -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as libc::c_int; 2];
    #[cfg(target_os = "linux")]
    {
        let flags = libc::O_CLOEXEC | if nonblocking { libc::O_NONBLOCK } else { 0 };
        // SAFETY: pipe2(2) writes two descriptors into the array we own.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), flags) } != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        // SAFETY: pipe(2) writes two descriptors into the array we own.
        if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
            return Err(io::Error::last_os_error());
        }
        for fd in fds {
            // SAFETY: fcntl on descriptors we just created.
            let set = unsafe {
                let status = libc::fcntl(fd, libc::F_GETFL);
                let nonblock = if nonblocking { libc::O_NONBLOCK } else { 0 };
                libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) == 0
                    && status >= 0
                    && libc::fcntl(fd, libc::F_SETFL, status | nonblock) == 0
            };
            if !set {
                let error = io::Error::last_os_error();
                // SAFETY: closing the descriptors we created and own.
                unsafe {
                    libc::close(fds[0]);
                    libc::close(fds[1]);
                }
                return Err(error);
            }
        }
    }
    // SAFETY: both descriptors are fresh and owned by nothing else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

impl Signals {
    pub(crate) fn install() -> io::Result<Signals> {
        let (read, write) = pipe(false)?;
        SIGNAL_PIPE.store(write.as_raw_fd(), Ordering::Relaxed);
        for signal in [libc::SIGTERM, libc::SIGINT] {
            // SAFETY: the handler only calls write(2), which is async-signal-safe.
            unsafe {
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = on_signal as *const () as libc::sighandler_t;
                action.sa_flags = libc::SA_RESTART;
                libc::sigemptyset(&mut action.sa_mask);
                libc::sigaction(signal, &action, std::ptr::null_mut());
            }
        }
        Ok(Signals { read, write })
    }

    /// Blocks until a signal arrives (returns its number) or [`Signals::wake`] is called
    /// (returns 0).
    pub(crate) fn wait(&self) -> i32 {
        let mut byte = 0u8;
        loop {
            // SAFETY: reads one byte into a local.
            let n = unsafe {
                libc::read(self.read.as_raw_fd(), std::ptr::addr_of_mut!(byte).cast(), 1)
            };
            if n == 1 {
                return i32::from(byte);
            }
            if n == 0 || io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
                return 0;
            }
        }
    }

    /// Makes a pending or future [`Signals::wait`] return 0, so its thread can be joined.
    pub(crate) fn wake(&self) {
        let byte = 0u8;
        // SAFETY: writes one byte from a local to our own pipe.
        unsafe {
            libc::write(self.write.as_raw_fd(), std::ptr::addr_of!(byte).cast(), 1);
        }
    }
}

impl Drop for Signals {
    fn drop(&mut self) {
        // The pipe closes after this; a signal from now on must not write to a descriptor
        // number that may be reused.
        SIGNAL_PIPE.store(-1, Ordering::Relaxed);
    }
}

/// A pipe that wakes a thread blocked in [`wait_socket`]: one thread calls [`Waker::wake`]
/// after queuing work, the other drains it when it wakes.
pub(crate) struct Waker {
    read: OwnedFd,
    write: OwnedFd,
}

impl Waker {
    pub(crate) fn new() -> io::Result<Waker> {
        let (read, write) = pipe(true)?;
        Ok(Waker { read, write })
    }

    pub(crate) fn wake(&self) {
        let byte = 1u8;
        // SAFETY: writes one byte from a local; a full pipe (EAGAIN) already means "awake".
        unsafe {
            libc::write(self.write.as_raw_fd(), std::ptr::addr_of!(byte).cast(), 1);
        }
    }

    fn drain(&self) {
        let mut buffer = [0u8; 64];
        // SAFETY: reads into a local buffer of the size we pass, until the pipe is empty.
        while unsafe { libc::read(self.read.as_raw_fd(), buffer.as_mut_ptr().cast(), buffer.len()) }
            > 0
        {}
    }
}

/// Sleeps until `read` has something to read (or its end), `write` has room (when given), the
/// waker is poked, or `timeout` passes; `read` and `write` may be one descriptor (a socket).
/// Unlike a socket read timeout, which the kernel rounds up to its tick (4-10 ms), this wakes
/// at once.
pub(crate) fn wait_io(
    read: RawFd,
    write: Option<RawFd>,
    waker: &Waker,
    timeout: Duration,
) -> io::Result<()> {
    let same = write == Some(read);
    let events = if same { libc::POLLIN | libc::POLLOUT } else { libc::POLLIN };
    let mut fds = [
        libc::pollfd { fd: read, events, revents: 0 },
        libc::pollfd { fd: waker.read.as_raw_fd(), events: libc::POLLIN, revents: 0 },
        libc::pollfd { fd: write.unwrap_or(-1), events: libc::POLLOUT, revents: 0 },
    ];
    let count = if write.is_some() && !same { 3 } else { 2 };
    let millis = libc::c_int::try_from(timeout.as_millis()).unwrap_or(libc::c_int::MAX);
    // SAFETY: poll(2) on an array of pollfds we own, `count` of them.
    let n = unsafe { libc::poll(fds.as_mut_ptr(), count, millis) };
    if n < 0 {
        let error = io::Error::last_os_error();
        if error.kind() != io::ErrorKind::Interrupted {
            return Err(error);
        }
    }
    waker.drain();
    Ok(())
}

/// Two pipes for a child's two descriptors: ours to write what it reads, and ours to read what
/// it writes: `(our writing end, its reading end, our reading end, its writing end)`. Ours are
/// non-blocking; none is inherited unless passed ([`pass_fds`]).
pub(crate) fn pipes_for_child() -> io::Result<(OwnedFd, OwnedFd, OwnedFd, OwnedFd)> {
    let (its_read, our_write) = pipe(false)?;
    let (our_read, its_write) = pipe(false)?;
    for fd in [&our_write, &our_read] {
        // SAFETY: fcntl on a descriptor we own.
        let set = unsafe {
            let status = libc::fcntl(fd.as_raw_fd(), libc::F_GETFL);
            status >= 0
                && libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, status | libc::O_NONBLOCK) == 0
        };
        if !set {
            return Err(io::Error::last_os_error());
        }
    }
    Ok((our_write, its_read, our_read, its_write))
}

/// Waits up to `timeout` for `fd` to become readable (or to reach end of file).
pub(crate) fn wait_readable(fd: &impl AsRawFd, timeout: Duration) -> io::Result<bool> {
    let mut poll = libc::pollfd { fd: fd.as_raw_fd(), events: libc::POLLIN, revents: 0 };
    let millis = libc::c_int::try_from(timeout.as_millis()).unwrap_or(libc::c_int::MAX);
    // SAFETY: poll(2) on one pollfd we own.
    let n = unsafe { libc::poll(&mut poll, 1, millis) };
    match n {
        -1 if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted => Ok(false),
        -1 => Err(io::Error::last_os_error()),
        0 => Ok(false),
        _ => Ok(true),
    }
}

/// The user owning the TCP socket of this machine whose own address is `local` and whose peer
/// is `remote`: an exact lookup through the kernel's socket diagnostics (netlink,
/// `SOCK_DIAG_BY_FAMILY`), tens of microseconds where reading /proc/net/tcp walks every socket
/// (~10 ms a read here, with the large tables of a 24 GiB machine). Linux only.
pub(crate) fn tcp_socket_owner(
    local: std::net::SocketAddr,
    remote: std::net::SocketAddr,
) -> io::Result<u32> {
    #[cfg(target_os = "linux")]
    {
        use std::net::SocketAddr::{V4, V6};
        const NETLINK_SOCK_DIAG: libc::c_int = 4;
        const SOCK_DIAG_BY_FAMILY: u16 = 20;
        const NLMSG_ERROR: u16 = 2;
        let (family, source, destination) = match (local, remote) {
            (V4(l), V4(r)) => (libc::AF_INET, l.ip().octets().to_vec(), r.ip().octets().to_vec()),
            (V6(l), V6(r)) => (libc::AF_INET6, l.ip().octets().to_vec(), r.ip().octets().to_vec()),
            _ => return Err(io::Error::other("the two addresses are of two families")),
        };
        // nlmsghdr (16 bytes), then inet_diag_req_v2: family, protocol, extensions, padding,
        // states (all), and the socket's id: its port and its peer's (big-endian), its
        // address and its peer's (16 bytes each), no interface, no cookie.
        let mut request = [0u8; 16 + 56];
        request[0..4].copy_from_slice(&(16u32 + 56).to_ne_bytes());
        request[4..6].copy_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
        request[6..8].copy_from_slice(&(libc::NLM_F_REQUEST as u16).to_ne_bytes());
        request[8..12].copy_from_slice(&1u32.to_ne_bytes());
        request[16] = family as u8;
        request[17] = libc::IPPROTO_TCP as u8;
        request[20..24].copy_from_slice(&u32::MAX.to_ne_bytes());
        request[24..26].copy_from_slice(&local.port().to_be_bytes());
        request[26..28].copy_from_slice(&remote.port().to_be_bytes());
        request[28..28 + source.len()].copy_from_slice(&source);
        request[44..44 + destination.len()].copy_from_slice(&destination);
        request[64..72].copy_from_slice(&[0xff; 8]);
        // SAFETY: a netlink socket made, used and closed here, on buffers we own.
        let (sent, answer) = unsafe {
            let fd = libc::socket(
                libc::AF_NETLINK,
                libc::SOCK_RAW | libc::SOCK_CLOEXEC,
                NETLINK_SOCK_DIAG,
            );
            if fd < 0 {
                return Err(io::Error::last_os_error());
            }
            let fd = OwnedFd::from_raw_fd(fd);
            let sent = libc::send(fd.as_raw_fd(), request.as_ptr().cast(), request.len(), 0);
            let mut answer = [0u8; 512];
            let got = match sent {
                -1 => -1,
                _ => libc::recv(fd.as_raw_fd(), answer.as_mut_ptr().cast(), answer.len(), 0),
            };
            (got, answer)
        };
        let got = usize::try_from(sent).map_err(|_| io::Error::last_os_error())?;
        let kind = u16::from_ne_bytes([answer[4], answer[5]]);
        if got >= 20 && kind == NLMSG_ERROR {
            let errno = i32::from_ne_bytes([answer[16], answer[17], answer[18], answer[19]]);
            return Err(io::Error::from_raw_os_error(-errno));
        }
        // inet_diag_msg: family, state, timer, retransmits, the socket's id (48 bytes),
        // expires, receive and send queues, then the owner's uid.
        if got < 16 + 68 || kind != SOCK_DIAG_BY_FAMILY {
            return Err(io::Error::other("the kernel's socket diagnostics gave no socket"));
        }
        Ok(u32::from_ne_bytes([answer[80], answer[81], answer[82], answer[83]]))
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (local, remote);
        Err(io::Error::other("only Linux says which user owns a socket"))
    }
}

/// Asks the kernel to acknowledge received data at once instead of delaying the ACK by up to
/// 40 ms. Node's inspector socket lacks TCP_NODELAY, so its second small write in a row waits
/// for our ACK; without this every pause costs ~44 ms (measured: a bare client took 88 s for 2,000 hits). Linux clears
/// the flag after use, so callers set it again after every read. A no-op elsewhere.
pub(crate) fn quick_ack(stream: &TcpStream) {
    #[cfg(target_os = "linux")]
    {
        let one: libc::c_int = 1;
        // SAFETY: setsockopt with a pointer to a local int of the size we pass.
        unsafe {
            libc::setsockopt(
                stream.as_raw_fd(),
                libc::IPPROTO_TCP,
                libc::TCP_QUICKACK,
                std::ptr::addr_of!(one).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            );
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = stream;
}

#[cfg(test)]
mod tests {
    use super::{new_session, ProcessGroup};

    #[test]
    fn a_recycled_pid_is_not_taken_for_the_group() {
        let mut command = std::process::Command::new("sleep");
        command.arg("30");
        new_session(&mut command);
        let mut child = command.spawn().unwrap();
        let group = ProcessGroup::of(child.id());
        assert!(group.started.is_some());
        // The same pid with another start time: a newcomer, left alone.
        ProcessGroup { started: group.started.map(|t| t + 1), ..group }.kill();
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(child.try_wait().unwrap().is_none(), "a stranger's group was killed");
        group.kill();
        let status = child.wait().unwrap();
        assert_eq!(std::os::unix::process::ExitStatusExt::signal(&status), Some(9));
    }
}
