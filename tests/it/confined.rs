//! What a program under debug gets of the server: none of its secrets or settings (a token of
//! `--http`, `DEBUG_MCP_*`), and no terminal (a program that writes to or reads `/dev/tty`
//! fails at once instead of writing on the client's terminal, or stopping on SIGTTIN).

use std::ffi::CString;
use std::os::unix::process::CommandExt;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::{fixture, ok, root, tag, Server};

/// The settings of debug-mcp itself the server is given in these tests.
const SETTINGS: [(&str, &str); 5] = [
    ("DEBUG_MCP_LOG", "warn"),
    ("DEBUG_MCP_MAX_SESSIONS", "7"),
    ("DEBUG_MCP_SESSION_IDLE_MS", "600000"),
    ("DEBUG_MCP_ALLOWED_HOSTS", "example.invalid"),
    ("DEBUG_MCP_PYTHON_DEBUGGER", "own"),
];

/// The variables a program may get from debug-mcp: where its helpers report and what marks
/// its processes; none grants anything.
const HELPERS: [&str; 7] = [
    "DEBUG_MCP_RUN",
    "DEBUG_MCP_CHANNEL",
    "DEBUG_MCP_TRACE",
    "DEBUG_MCP_TRACE_FD",
    "DEBUG_MCP_TRACE_RESOLVE",
    "DEBUG_MCP_DAP",
    "DEBUG_MCP_SESSION",
];

/// Over HTTP with two tokens in `DEBUG_MCP_HTTP_TOKEN` and every setting above: a program one
/// token's client runs (Node, Python; a run and a session) reads no token and no setting.
#[test]
fn a_program_gets_no_secret_and_no_setting_of_the_server() {
    let tokens = "alpha-secret-token\nbeta-secret-token";
    let mut env: Vec<(&str, &str)> = SETTINGS.to_vec();
    env.push(("DEBUG_MCP_HTTP_TOKEN", tokens));
    let server = crate::http::Http::start_with_env(&["127.0.0.1:0"], &env);
    let secrets = "alpha-secret beta-secret example.invalid 600000";
    let tag = tag();
    let python = crate::python::python();
    for command in [
        format!("DMCP_TAG={tag} node {} {secrets}", fixture("confined/secrets.js")),
        format!("DMCP_TAG={tag} {python} {} {secrets}", fixture("confined/secrets.py")),
    ] {
        let s = server.tool(
            Some("alpha-secret-token"),
            "debug-script",
            json!({"command": command, "failures": true}),
        );
        let stdout = s["output"]["stdout"].as_str().unwrap_or_else(|| panic!("{s}"));
        let said: Value =
            serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {s}"));
        assert_eq!(said["leaked"], json!([]), "{command}: {said}");
        for name in said["names"].as_array().unwrap() {
            assert!(HELPERS.contains(&name.as_str().unwrap()), "{command}: {said}");
        }
    }
    // A session's program too (debug-mcp's own Python debugger).
    let file = fixture("confined/secrets.py");
    let state = server.tool(
        Some("alpha-secret-token"),
        "debug-launch",
        json!({"command": format!("DMCP_TAG={tag} {python} {file} {secrets}"),
               "breakpoints": [{"file": file, "line": 10}]}),
    );
    assert_eq!(state["state"], "paused", "{state}");
    let leaked = server.tool(
        Some("alpha-secret-token"),
        "debug-evaluate",
        json!({"expression": format!("[n for n in names if n not in {HELPERS:?}] + leaked")}),
    );
    assert_eq!(leaked["value"], json!([]), "{leaked}");
    server.tool(Some("alpha-secret-token"), "debug-stop", json!({}));
    crate::assert_no_debuggee(&tag);
}

/// The server runs on a terminal (its controlling one, as when a client runs in one): a
/// program under debug cannot reach it. Writing to `/dev/tty` and reading from it both fail
/// at once (ENXIO: no controlling terminal), nothing is written on the terminal, and the run
/// ends when the program does.
#[test]
fn a_program_does_not_reach_the_servers_terminal() {
    // SAFETY: posix_openpt, grantpt, unlockpt and ptsname on a descriptor made here; the name
    // is copied at once.
    let (master, slave) = unsafe {
        let master = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY);
        assert!(master >= 0 && libc::grantpt(master) == 0 && libc::unlockpt(master) == 0);
        let name = std::ffi::CStr::from_ptr(libc::ptsname(master)).to_owned();
        (master, name)
    };
    let slave: CString = slave;
    let set_up = |command: &mut std::process::Command| {
        let slave = slave.clone();
        // SAFETY: setsid, open, ioctl and close are async-signal-safe; `slave` was made before.
        unsafe {
            command.pre_exec(move || {
                libc::setsid();
                let fd = libc::open(slave.as_ptr(), libc::O_RDWR);
                if fd < 0 || libc::ioctl(fd, libc::TIOCSCTTY, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                libc::close(fd);
                Ok(())
            });
        }
    };
    let mut server = Server::start_set_up(&root(), &[], set_up);
    server.request(
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {},
               "clientInfo": {"name": "it", "version": "0"}}),
    );
    let started = Instant::now();
    let result = server.debug_script(json!({
        "command": format!("DMCP_TAG={} node {}", tag(), fixture("confined/tty.js")),
        "failures": true, "timeout": 10000}));
    let s = ok(&result);
    assert_eq!(s["output"]["stdout"], "w ENXIO\nr ENXIO\n", "{s}");
    assert_eq!((&s["exitCode"], &s["timedOut"]), (&json!(0), &json!(false)), "{s}");
    assert!(started.elapsed() < Duration::from_secs(8), "{:?}", started.elapsed());
    // SAFETY: a non-blocking read into a local buffer from the descriptor made above.
    let written = unsafe {
        libc::fcntl(master, libc::F_SETFL, libc::O_NONBLOCK);
        let mut buf = [0u8; 256];
        libc::read(master, buf.as_mut_ptr().cast(), buf.len())
    };
    assert!(written <= 0, "the program wrote on the terminal");
    drop(server);
    // SAFETY: closing the descriptor made above.
    unsafe { libc::close(master) };
}
