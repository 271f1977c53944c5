//! C under lldb-dap: the program's stdout and stderr apart, and an `abort()` said as the signal
//! it is, its failure carrying what the program printed for it.

use std::sync::OnceLock;

use serde_json::json;

use crate::need::{need, Tool};
use crate::{ok, Server};

fn assert_program() -> &'static str {
    static BUILT: OnceLock<String> = OnceLock::new();
    BUILT.get_or_init(|| crate::native::build("gcc", "native/c/assert.c", "assert"))
}

/// stdout and stderr come back apart (stderr was always `""`, its text inside stdout).
#[test]
fn stdout_and_stderr_apart() {
    if !need(Tool::Lldb) {
        return;
    }
    let mut server = Server::initialized();
    let result = server.debug_script(json!({"command": assert_program(), "failures": true}));
    let s = ok(&result);
    assert_eq!(
        s["output"],
        json!({"stdout": "to stdout\n", "stderr": "to stderr\n", "truncated": false}),
        "{s}"
    );
    assert_eq!(s["exitCode"], 0, "{s}");
}

/// A failed `assert` aborts: the run says `signal: 6` (it said `exitCode: 6`, as `exit(6)`
/// would), and the failure's message is the assertion's line (it was `signal SIGABRT`).
#[test]
fn an_abort_is_a_signal_and_its_failure_says_the_assertion() {
    if !need(Tool::Lldb) {
        return;
    }
    let mut server = Server::initialized();
    let command = format!("{} x", assert_program());
    let result = server.debug_script(json!({"command": command, "failures": true}));
    let s = ok(&result);
    assert_eq!((s.get("exitCode"), &s["signal"]), (None, &json!(6)), "{s}");
    let failure = &s["failures"][0];
    assert_eq!(failure["type"], "SIGABRT", "{s}");
    let message = failure["message"].as_str().unwrap();
    assert!(
        message.ends_with("main: Assertion `argc < 2 && \"at most one argument\"' failed."),
        "{s}"
    );
    assert_eq!(failure["frames"][0]["function"], "main", "{s}");
    assert!(s["output"]["stderr"].as_str().unwrap().starts_with("to stderr\n"), "{s}");
}

/// A session too: the abort stops it (`exception`), and going on, it ends by the signal, not
/// with an exit code of 6.
#[test]
fn a_session_ends_by_the_signal_it_stopped_at() {
    if !need(Tool::Lldb) {
        return;
    }
    let mut server = Server::initialized();
    let command = format!("{} x", assert_program());
    let state = crate::tool(&mut server, "debug-launch", json!({"command": command}));
    assert_eq!((&state["state"], &state["reason"]), (&json!("paused"), &json!("exception")));
    let state = crate::tool(&mut server, "debug-continue", json!({}));
    assert_eq!(state["state"], "exited", "{state}");
    assert_eq!((state.get("exitCode"), &state["signal"]), (None, &json!(6)), "{state}");
    assert_eq!(state["stderr"].as_str().unwrap().lines().next(), Some("to stderr"), "{state}");
}
