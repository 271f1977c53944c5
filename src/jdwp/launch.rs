//! Starting a command's JVMs under JDWP without a door for anyone else.
//!
//! JDWP has no authentication: a JVM listening for a debugger (`server=y`) serves whoever
//! connects first. So debug-mcp listens instead, on a loopback port of its own, and every JVM
//! the command starts connects to it (`server=n`, held before `main` with `suspend=y`): the
//! option reaches every JVM through `JAVA_TOOL_OPTIONS` (Maven, surefire's fork, the source
//! launcher, a script's `java`). A connection is taken only from a process of this server's
//! user (the kernel says whose socket the peer is) that answers the JDWP handshake; any other
//! is closed at once. The JVM's `Picked up JAVA_TOOL_OPTIONS` line is left out of the output.

use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crossbeam_channel::Sender;

use super::{Client, Incoming};
use crate::log;
use crate::thread::JoinOnDrop;

/// The environment variable every JVM reads its extra options from.
pub(crate) const TOOL_OPTIONS: &str = "JAVA_TOOL_OPTIONS";

/// The loopback listener JVMs connect to, and its accepting thread (ended when dropped).
pub(crate) struct Listener {
    pub(crate) port: u16,
    pub(crate) incoming: crossbeam_channel::Receiver<Incoming>,
    stopping: Arc<AtomicBool>,
    acceptor: Option<JoinOnDrop>,
}

impl Listener {
    pub(crate) fn open() -> std::io::Result<Listener> {
        let listener = TcpListener::bind(("127.0.0.1", 0))?;
        let port = listener.local_addr()?.port();
        let (tx, incoming) = crossbeam_channel::unbounded();
        let stopping = Arc::new(AtomicBool::new(false));
        let acceptor = {
            let stopping = stopping.clone();
            JoinOnDrop::spawn("jdwp-listen", move || accept(&listener, &tx, &stopping))
        };
        Ok(Listener { port, incoming, stopping, acceptor: Some(acceptor) })
    }

    /// The `-agentlib` option that makes a JVM connect here, held before `main`.
    pub(crate) fn agent(&self) -> String {
        format!(
            "-agentlib:jdwp=transport=dt_socket,server=n,suspend=y,address=127.0.0.1:{}",
            self.port
        )
    }

    /// `JAVA_TOOL_OPTIONS` for the command: the agent after whatever it had.
    pub(crate) fn tool_options(&self, env: &[(String, String)]) -> (String, String) {
        let had = env
            .iter()
            .rev()
            .find(|(name, _)| name == TOOL_OPTIONS)
            .map(|(_, value)| value.clone())
            .or_else(|| std::env::var(TOOL_OPTIONS).ok())
            .filter(|value| !value.trim().is_empty());
        let value = match had {
            Some(had) => format!("{had} {}", self.agent()),
            None => self.agent(),
        };
        (TOOL_OPTIONS.to_string(), value)
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        // Wake the acceptor with a connection of our own.
        self.stopping.store(true, Ordering::Relaxed);
        drop(TcpStream::connect(("127.0.0.1", self.port)));
        drop(self.acceptor.take());
    }
}

fn accept(listener: &TcpListener, incoming: &Sender<Incoming>, stopping: &AtomicBool) {
    let mut conn = 0;
    for stream in listener.incoming() {
        if stopping.load(Ordering::Relaxed) {
            break;
        }
        let Ok(stream) = stream else { continue };
        if let Some(why) = crate::net::peer_is_another_user(&stream) {
            log::warn(format_args!("refused a JDWP connection from {why}"));
            continue;
        }
        let Ok(peer) = stream.peer_addr() else { continue };
        // Its packets come on the same channel, after this.
        match Client::start(stream, conn, incoming.clone()) {
            Ok(client) => {
                if incoming.send(Incoming::Connected { conn, client, peer }).is_err() {
                    break;
                }
                conn += 1;
            }
            Err(e) => log::warn(format_args!("a connection that is not a JVM's: {e}")),
        }
    }
}

/// Starts `command` with every JVM of it connecting to a listener of ours: the listener
/// (keep it open while JVMs may come) and the program.
pub(crate) fn start(
    command: &crate::shell::CommandLine,
) -> Result<(Listener, crate::process::Debuggee), crate::debugger::Failure> {
    use crate::debugger::{Code, Failure};
    use crate::process::SpawnError;
    let listener = Listener::open().map_err(|e| {
        Failure::new(Code::Internal, format!("cannot open a loopback port for the JVM: {e}"))
    })?;
    let mut env = command.env.clone();
    env.push(listener.tool_options(&command.env));
    let spec = crate::process::Spec::of(&command.words, env, command);
    let debuggee = crate::process::Debuggee::spawn(&spec, is_jvm_noise).map_err(|e| match e {
        SpawnError::NotFound(_) => Failure::new(Code::CommandNotFound, e.to_string()),
        SpawnError::Other(..) => Failure::new(Code::SpawnFailed, e.to_string()),
    })?;
    Ok((listener, debuggee))
}

/// Whether a command runs Java: `java`, a JDK tool that runs a JVM, or Maven or Gradle (by
/// the program's name).
pub(crate) fn is_java(command: &crate::shell::CommandLine) -> bool {
    let program = command.words.first().map(String::as_str).unwrap_or_default();
    let name = program.rsplit('/').next().unwrap_or(program);
    matches!(name, "java" | "mvn" | "mvnw" | "gradle" | "gradlew" | "jshell")
}

/// The JVM's own lines on stderr, not the program's: the one that echoes our option.
pub(crate) fn is_jvm_noise(line: &str) -> bool {
    line.starts_with("Picked up JAVA_TOOL_OPTIONS:")
        && line.contains("-agentlib:jdwp=transport=dt_socket,server=n,suspend=y,address=127.0.0.1:")
}

/// The pid of the JVM of `program` (it, or a process under it) that connected from `peer`
/// (0 when none is found).
pub(crate) fn pid_of_jvm(program: &crate::process::Debuggee, peer: std::net::SocketAddr) -> u32 {
    let mut candidates = vec![program.pid()];
    candidates.extend(program.descendants(None).iter().map(|d| d.process.pid));
    pid_of_peer(peer, &candidates).unwrap_or(0)
}

/// The pid of the process among `candidates` holding the socket whose own address is `peer`
/// (the JVM that connected from there), found through /proc.
fn pid_of_peer(peer: std::net::SocketAddr, candidates: &[u32]) -> Option<u32> {
    let inode = socket_inode(peer)?;
    let target = format!("socket:[{inode}]");
    candidates.iter().copied().find(|pid| {
        let Ok(entries) = std::fs::read_dir(format!("/proc/{pid}/fd")) else { return false };
        entries.flatten().any(|entry| {
            std::fs::read_link(entry.path()).is_ok_and(|link| link.as_os_str() == target.as_str())
        })
    })
}

/// The inode of the TCP socket whose local address is `address` (/proc/net/tcp).
fn socket_inode(address: std::net::SocketAddr) -> Option<u64> {
    let port = format!(":{:04X}", address.port());
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(table) else { continue };
        for line in text.lines().skip(1) {
            let fields: Vec<&str> = line.split_whitespace().collect();
            if fields.len() > 9 && fields[1].ends_with(&port) {
                return fields[9].parse().ok();
            }
        }
    }
    None
}
