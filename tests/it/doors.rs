//! What another local user can reach of a debug-mcp server's work: nothing. Each test opens a
//! program under debug (a session paused, or a run going on) and has the unprivileged user
//! `debug-mcp-other` (`need::other_user`, made by `useradd`; CI runs as root) try every
//! listening port of the server and of every process under it (`fixtures/doors/attacker.js`):
//! an inspector's target list and WebSocket, a debug adapter's `initialize`, a JVM's JDWP
//! handshake, MCP over HTTP. A test first checks that there is something to try (the inspector
//! does listen), so a port that moved elsewhere cannot pass it by accident.

use std::collections::HashSet;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::need::{self, need, Tool};
use crate::{assert_no_debuggee, fixture, node, root, tag, tool, Server};

/// `fixtures/doors/attacker.js`, run as the other user.
struct Attacker {
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::Receiver<String>,
}

impl Attacker {
    /// `fixtures/doors/attacker.js` as `user` (uid, gid); its text is passed to `node -e`,
    /// since that user may not be able to read the checkout.
    fn start(user: (u32, u32)) -> Attacker {
        let source = std::fs::read_to_string(root().join("fixtures/doors/attacker.js")).unwrap();
        Attacker::spawn_as(user, None, Command::new("node").arg("-e").arg(source))
    }

    /// `fixtures/doors/rush.py` as `user`, in the network namespace of process `beside` (see
    /// [`isolated`]), rushing at every port of user `victim`; `None` without a Python that
    /// `user` may run.
    fn rush(user: (u32, u32), beside: u32, victim: u32) -> Option<Attacker> {
        // Not a Python of the tests' own (pyenv's, the venv): another user cannot reach those.
        let Some(python) = ["/usr/bin/python3", "/usr/local/bin/python3"]
            .into_iter()
            .find(|p| std::path::Path::new(p).exists())
        else {
            crate::need::skip_unless_root(
                "/usr/bin/python3, for another user to run (apt-get install python3)",
            );
            return None;
        };
        let source = std::fs::read_to_string(root().join("fixtures/doors/rush.py")).unwrap();
        let mut command = Command::new(python);
        command.arg("-c").arg(source).arg(victim.to_string());
        let attacker = Attacker::spawn_as(user, Some(beside), &mut command);
        // It says when it watches.
        attacker.lines.recv_timeout(Duration::from_secs(30)).expect("the rush begins");
        Some(attacker)
    }

    fn spawn_as((uid, gid): (u32, u32), beside: Option<u32>, command: &mut Command) -> Attacker {
        let namespace =
            beside.map(|pid| std::fs::File::open(format!("/proc/{pid}/ns/net")).unwrap());
        let network = namespace.as_ref().map(std::os::fd::AsRawFd::as_raw_fd);
        command
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .current_dir("/")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        // SAFETY: setns, setgroups, setgid and setuid are async-signal-safe; nothing is
        // allocated. In this order: joining the namespace needs root, which the rest gives up.
        unsafe {
            command.pre_exec(move || {
                let failed = |r: libc::c_int| match r {
                    0 => Ok(()),
                    _ => Err(std::io::Error::last_os_error()),
                };
                if let Some(fd) = network {
                    failed(libc::setns(fd, libc::CLONE_NEWNET))?;
                }
                failed(libc::setgroups(0, std::ptr::null()))?;
                failed(libc::setgid(gid))?;
                failed(libc::setuid(uid))
            });
        }
        let mut child = command.spawn().unwrap();
        drop(namespace);
        let stdin = child.stdin.take().unwrap();
        let (tx, lines) = mpsc::channel();
        let stdout = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Attacker { child, stdin, lines }
    }

    /// Sends `command` and collects the records up to the round's end.
    fn round(&mut self, command: impl std::fmt::Display) -> Vec<Value> {
        writeln!(self.stdin, "{command}").unwrap();
        let mut results = Vec::new();
        loop {
            let line =
                self.lines.recv_timeout(Duration::from_secs(60)).expect("the attacker answers");
            let result: Value = serde_json::from_str(&line).unwrap();
            if result["round"] == "done" {
                return results;
            }
            results.push(result);
        }
    }

    /// Every door tried on each of `ports`: one record each.
    fn attack(&mut self, ports: &[u16]) -> Vec<Value> {
        self.round(json!({"ports": ports}))
    }
}

impl Drop for Attacker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Every process under `pid`, and `pid` (read from each thread's `children`: quick enough to
/// race a debug adapter to its port).
fn tree(pid: u32) -> Vec<u32> {
    let mut all = vec![pid];
    let mut at = 0;
    while at < all.len() {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{}/task", all[at])) else {
            at += 1;
            continue;
        };
        for task in tasks.flatten() {
            let children =
                std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
            all.extend(children.split_whitespace().filter_map(|c| c.parse::<u32>().ok()));
        }
        at += 1;
    }
    all
}

/// The TCP ports listened on by `pid` and every process under it.
fn listening_ports(pid: u32) -> Vec<u16> {
    let mut inodes = HashSet::new();
    for process in tree(pid) {
        let Ok(fds) = std::fs::read_dir(format!("/proc/{process}/fd")) else { continue };
        for fd in fds.flatten() {
            let link = std::fs::read_link(fd.path()).unwrap_or_default();
            let link = link.to_string_lossy();
            if let Some(inode) = link.strip_prefix("socket:[").and_then(|l| l.strip_suffix(']')) {
                inodes.insert(inode.to_string());
            }
        }
    }
    let mut ports = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let text = std::fs::read_to_string(table).unwrap_or_default();
        for line in text.lines().skip(1) {
            let fields: Vec<&str> = line.split_whitespace().collect();
            // State 0A: listening.
            if fields.len() > 9 && fields[3] == "0A" && inodes.contains(fields[9]) {
                let port = fields[1].rsplit(':').next().unwrap();
                ports.push(u16::from_str_radix(port, 16).unwrap());
            }
        }
    }
    ports.sort_unstable();
    ports.dedup();
    ports
}

/// Asserts that the attacker got nothing through any door of `ports`.
fn assert_nothing_reached(results: &[Value], ports: &[u16]) {
    assert_eq!(results.len(), ports.len(), "{results:?}");
    for result in results {
        for door in ["ran", "dap", "jdwp", "mcp"] {
            assert_eq!(result[door], false, "another user reached a door ({door}): {result}");
        }
        assert_eq!(result["listed"], json!([]), "another user read an inspector's URL: {result}");
    }
}

/// A Node session (a parent and the child it forked, each under its inspector) and a
/// `debug-script` run: their inspectors listen on loopback, but list no target to another user
/// and take no one who has not read the address on the program's stderr.
#[test]
fn another_user_gets_nothing_from_node() {
    let Some(user) = need::other_user() else { return };
    let mut attacker = Attacker::start(user);
    let mut server = Server::initialized();
    let tag = tag();
    let file = fixture("children/fork.js");
    let state = tool(
        &mut server,
        "debug-launch",
        json!({"command": node(&tag, "children/fork.js", ""),
               "breakpoints": [{"file": file, "line": 6}]}),
    );
    assert_eq!((&state["state"], &state["location"]["line"]), (&json!("paused"), &json!(6)));
    let ports = listening_ports(server.pid());
    assert_eq!(ports.len(), 2, "the parent's and the child's inspectors listen: {ports:?}");
    assert_nothing_reached(&attacker.attack(&ports), &ports);
    tool(&mut server, "debug-stop", json!({}));
    assert_no_debuggee(&tag);

    // A run: its inspector is tried while the program runs (it never ends by itself).
    let id = server.start_request(
        "tools/call",
        json!({"name": "debug-script", "arguments": {
            "command": node(&tag, "hang.js", ""), "hang": 60000, "timeout": 60000}}),
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    let ports = loop {
        let ports = listening_ports(server.pid());
        if !ports.is_empty() || Instant::now() > deadline {
            break ports;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(ports.len(), 1, "the run's inspector listens: {ports:?}");
    assert_nothing_reached(&attacker.attack(&ports), &ports);
    server.notify("notifications/cancelled", json!({"requestId": id}));
    crate::eventually(Duration::from_secs(10), "the cancelled run ends", || {
        crate::processes_with_tag(&tag).is_empty()
    });
}

/// A JVM's run and session: the JVM connects to a port of the server's (JDWP has no
/// authentication, so no JVM of ours listens), and that port refuses another user: no
/// handshake, nothing read.
#[test]
fn another_user_gets_nothing_from_a_jvm() {
    if !need(Tool::Java) {
        return;
    }
    let Some(user) = need::other_user() else { return };
    let classes = crate::java::compiled(false);
    let mut attacker = Attacker::start(user);
    let mut server = Server::initialized();
    let tag = tag();
    let id = server.start_request(
        "tools/call",
        json!({"name": "debug-script", "arguments": {
            "command": format!("DMCP_TAG={tag} java -cp {classes} app.Server"),
            "hang": 60000, "timeout": 60000}}),
    );
    // Ours, and the program's own HTTP port once the JVM runs.
    let deadline = Instant::now() + Duration::from_secs(30);
    let ports = loop {
        let ports = listening_ports(server.pid());
        if ports.len() >= 2 || Instant::now() > deadline {
            break ports;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(ports.len(), 2, "the JVMs' port and the program's: {ports:?}");
    assert_nothing_reached(&attacker.attack(&ports), &ports);
    server.notify("notifications/cancelled", json!({"requestId": id}));
    crate::eventually(Duration::from_secs(10), "the cancelled run ends", || {
        crate::processes_with_tag(&tag).is_empty()
    });

    // A session: the same door, closed the same way.
    let state = tool(
        &mut server,
        "debug-launch",
        json!({"command": format!("DMCP_TAG={tag} java -cp {classes} app.Server"), "timeout": 2000}),
    );
    assert_eq!(state["state"], "running", "{state}");
    let ports = listening_ports(server.pid());
    assert_eq!(ports.len(), 2, "the JVMs' port and the program's: {ports:?}");
    assert_nothing_reached(&attacker.attack(&ports), &ports);
    tool(&mut server, "debug-stop", json!({}));
    assert_no_debuggee(&tag);
}

/// A Deno session: its inspector lists no target either.
#[test]
fn another_user_gets_nothing_from_deno() {
    let Some(user) = need::other_user() else { return };
    need::npm_packages();
    let mut attacker = Attacker::start(user);
    let mut server = Server::initialized();
    let tag = tag();
    let state = tool(
        &mut server,
        "debug-launch",
        json!({"command": crate::deno::deno(&tag, &format!("run '{}'", fixture("deno/orders.ts"))),
               "breakpoints": [{"file": fixture("deno/orders.ts"), "line": 14}]}),
    );
    assert_eq!(state["state"], "paused", "{state}");
    let ports = listening_ports(server.pid());
    assert_eq!(ports.len(), 1, "Deno's inspector listens: {ports:?}");
    assert_nothing_reached(&attacker.attack(&ports), &ports);
    tool(&mut server, "debug-stop", json!({}));
    assert_no_debuggee(&tag);
}

/// A page in the browser debug-mcp starts: DevTools goes over pipes, so nothing listens.
#[test]
fn another_user_gets_nothing_from_a_browser() {
    if !need(Tool::Chromium) {
        return;
    }
    let Some(user) = need::other_user() else { return };
    let mut attacker = Attacker::start(user);
    let web = crate::browser::WebServer::start();
    let mut server = Server::initialized();
    let state = tool(
        &mut server,
        "debug-launch",
        json!({"url": web.url("static/index.html"), "cwd": fixture("web"),
               "breakpoints": [{"file": "static/cart.js", "line": 4}]}),
    );
    assert_eq!(state["state"], "paused", "{state}");
    let ports = listening_ports(server.pid());
    assert_eq!(ports, Vec::<u16>::new(), "nothing of the browser's listens");
    assert_nothing_reached(&attacker.attack(&ports), &ports);
    let total = tool(&mut server, "debug-evaluate", json!({"expression": "cart.total"}));
    assert_eq!(total["value"], 0, "the page is ours to debug: {total}");
    tool(&mut server, "debug-stop", json!({}));
}

/// debugpy's adapter, when debugpy is asked for: its ports take no one else's connection.
#[test]
fn another_user_gets_nothing_from_debugpy() {
    let Some(user) = need::other_user() else { return };
    let python = crate::python::python();
    let mut attacker = Attacker::start(user);
    let mut server = Server::initialized();
    let tag = tag();
    let loop_py = fixture("py/loop.py");
    let state = tool(
        &mut server,
        "debug-launch",
        json!({"command": format!("DMCP_TAG={tag} {python} {loop_py}"), "language": "debugpy",
               "breakpoints": [{"file": loop_py, "line": 5}]}),
    );
    assert_eq!(state["state"], "paused", "{state}");
    let ports = listening_ports(server.pid());
    assert!(!ports.is_empty(), "debugpy's adapter listens for its clients");
    let results = attacker.attack(&ports);
    assert_nothing_reached(&results, &ports);
    // Still ours: the session goes on.
    let total = tool(&mut server, "debug-evaluate", json!({"expression": "total"}));
    assert_eq!(total["value"], 0, "{total}");
    tool(&mut server, "debug-stop", json!({}));
    assert_no_debuggee(&tag);
}

/// Runs the command in a network of its own, its loopback up: what listens there is only its,
/// so an attacker let in (`Attacker::rush`) can take every port that starts listening,
/// as a real one would, without touching other tests'.
fn isolated(command: &mut Command) {
    // SAFETY: unshare, socket, ioctl and close are async-signal-safe; nothing is allocated.
    unsafe {
        command.pre_exec(|| {
            if libc::unshare(libc::CLONE_NEWNET) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            let socket = libc::socket(libc::AF_INET, libc::SOCK_DGRAM, 0);
            let mut request: libc::ifreq = std::mem::zeroed();
            request.ifr_name[..2].copy_from_slice(&[b'l' as libc::c_char, b'o' as libc::c_char]);
            let up = libc::ioctl(socket, libc::SIOCGIFFLAGS, &mut request) == 0 && {
                request.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
                libc::ioctl(socket, libc::SIOCSIFFLAGS, &request) == 0
            };
            let error = std::io::Error::last_os_error();
            libc::close(socket);
            match up {
                true => Ok(()),
                false => Err(error),
            }
        });
    }
}

/// Delve connects to a port of ours: it listens on none (its own refused another user, but
/// then ended, failing the launch: a race another user could win), and another user who
/// connects to ours first is turned away. The server runs in a network of its own with the
/// attacker, which connects to every port of the server's user the moment it sees it listen
/// (`fixtures/doors/rush.py`) and says `initialize`.
#[test]
fn another_user_cannot_break_a_go_launch() {
    if !need(Tool::Delve) {
        return;
    }
    let Some(user) = need::other_user() else { return };
    let mut server = Server::start_set_up(&root(), &[], isolated);
    server.request(
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {},
               "clientInfo": {"name": "it", "version": "0"}}),
    );
    // SAFETY: geteuid has no preconditions.
    let victim = unsafe { libc::geteuid() };
    let Some(mut attacker) = Attacker::rush(user, server.pid(), victim) else { return };
    let dir = fixture("native/go");
    let file = fixture("native/go/main.go");
    const LAUNCHES: usize = 4;
    for _ in 0..LAUNCHES {
        let state = tool(
            &mut server,
            "debug-launch",
            json!({"command": "go run .", "cwd": dir,
                   "breakpoints": [{"file": file, "line": 16}], "timeout": 120000}),
        );
        assert_eq!(state["state"], "paused", "{state}");
        let ports = listening_ports(server.pid());
        assert_eq!(ports, Vec::<u16>::new(), "nothing listens while the session is paused");
        tool(&mut server, "debug-stop", json!({}));
    }
    let rushed = attacker.round("stop");
    assert!(!rushed.is_empty(), "the attacker reached a port while Delve started");
    for attempt in &rushed {
        assert_eq!(attempt["dap"], false, "another user was answered: {attempt}");
    }
}

/// Sessions whose debugger speaks over stdin and stdout or a socket in the server's private
/// directory open no port at all: debug-mcp's own Python debugger, lldb-dap, and rdbg as the
/// configured adapter (`"connect": "unix"`: it listened on a loopback port before).
#[test]
fn nothing_listens_under_python_c_or_a_configured_adapter() {
    let mut server = Server::initialized();
    let tag = tag();
    let python = crate::python::python();
    let loop_py = fixture("py/loop.py");
    let mut sessions = vec![json!({
        "command": format!("DMCP_TAG={tag} {python} {loop_py}"),
        "breakpoints": [{"file": loop_py, "line": 5}]})];
    if need(Tool::Lldb) {
        sessions.push(json!({"command": format!("DMCP_TAG={tag} {} 3", crate::native::c_loop()),
            "breakpoints": [{"file": fixture("native/c/loop.c"), "line": 15}]}));
    }
    if need(Tool::Ruby) {
        sessions.push(json!({"command": "ruby orders.rb", "cwd": fixture("native/ruby"),
            "breakpoints": [{"file": fixture("native/ruby/orders.rb"), "line": 3}]}));
    }
    for arguments in sessions {
        let state = tool(&mut server, "debug-launch", arguments.clone());
        assert_eq!(state["state"], "paused", "{arguments}: {state}");
        let ports = listening_ports(server.pid());
        assert_eq!(ports, Vec::<u16>::new(), "{arguments}: nothing listens");
        tool(&mut server, "debug-stop", json!({}));
    }
    assert_no_debuggee(&tag);
}

/// An HTTP server without tokens serves only its own user's processes.
#[test]
fn another_user_gets_nothing_from_an_http_server_without_tokens() {
    let Some(user) = need::other_user() else { return };
    let mut attacker = Attacker::start(user);
    let server = crate::http::Http::start(&["127.0.0.1:0"]);
    let port: u16 = server.address.rsplit(':').next().unwrap().parse().unwrap();
    let results = attacker.attack(&[port]);
    assert_nothing_reached(&results, &[port]);
    assert_eq!(results[0]["connected"], true, "{results:?}");
    // Its own user is served.
    let tools = server.call(None, "tools/list", json!({}));
    assert!(tools["tools"].as_array().is_some_and(|t| !t.is_empty()), "{tools}");
}
