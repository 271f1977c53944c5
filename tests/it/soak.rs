//! A soak test: a few hundred debug-script calls and sessions, Node and Python, on one server;
//! afterwards no debuggee, adopted orphan, descriptor or thread of theirs is left and the
//! server's memory has stayed flat.
//!
//! It takes about a minute, so it runs only when `DEBUG_MCP_SOAK=1` (.ci/run sets it); a plain
//! `cargo test` passes it over, saying so.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::python::python;
use crate::{assert_no_debuggee, fixture, node, ok, tool, values, Server};

/// What the server process holds: resident memory (KiB), open descriptors, threads, children.
#[derive(Debug, PartialEq)]
struct Footprint {
    rss_kib: u64,
    fds: usize,
    threads: usize,
    children: usize,
}

fn footprint(pid: u32) -> Footprint {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let field = |name: &str| -> u64 {
        let line = status.lines().find(|l| l.starts_with(name)).unwrap();
        line.split_whitespace().nth(1).unwrap().parse().unwrap()
    };
    let count = |dir: String| std::fs::read_dir(dir).unwrap().count();
    let mut children = 0;
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).unwrap().flatten() {
        let text = std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
        children += text.split_whitespace().count();
    }
    Footprint {
        rss_kib: field("VmRSS:"),
        fds: count(format!("/proc/{pid}/fd")),
        threads: field("Threads:") as usize,
        children,
    }
}

/// One round: debug-script calls (Node, a program with a child and a daemon, Python) and a
/// Node and a Python session driven from breakpoint to stop.
fn round(server: &mut Server) {
    for _ in 0..4 {
        let tag = crate::tag();
        let result = server.debug_script(json!({"command": node(&tag, "loop.js", ""),
            "breakpoint": {"file": fixture("loop.js"), "line": 5}, "expression": "total"}));
        assert_eq!(values(ok(&result)), [json!(0), json!(10), json!(25)]);
        assert_no_debuggee(&tag);
    }
    let tag = crate::tag();
    let result = server.debug_script(json!({"command": node(&tag, "children/detached.js", ""),
        "breakpoint": {"file": fixture("children/detached.js"), "line": 10},
        "expression": "child.pid"}));
    ok(&result);
    assert_no_debuggee(&tag);

    let tag = crate::tag();
    let command = format!("DMCP_TAG={tag} {} {} 3", python(), fixture("py/count.py"));
    let result = server.debug_script(json!({"command": command,
        "breakpoint": {"file": fixture("py/count.py"), "line": 7}, "expression": "i"}));
    assert_eq!(values(ok(&result)), [json!(0), json!(1), json!(2)]);
    assert_no_debuggee(&tag);

    let tag = crate::tag();
    let state = tool(
        server,
        "debug-launch",
        json!({"command": node(&tag, "count.js", "5"),
               "breakpoints": [{"file": fixture("count.js"), "line": 6}]}),
    );
    assert_eq!(state["state"], "paused", "{state}");
    tool(server, "debug-continue", json!({"step": "over"}));
    tool(server, "debug-continue", json!({}));
    tool(server, "debug-evaluate", json!({"expression": "sum"}));
    tool(server, "debug-stop", json!({}));
    assert_no_debuggee(&tag);

    let tag = crate::tag();
    let command = format!("DMCP_TAG={tag} {} {} 5", python(), fixture("py/count.py"));
    let state = tool(
        server,
        "debug-launch",
        json!({"command": command,
               "breakpoints": [{"file": fixture("py/count.py"), "line": 7}]}),
    );
    assert_eq!(state["state"], "paused", "{state}");
    tool(server, "debug-continue", json!({}));
    tool(server, "debug-stop", json!({}));
    assert_no_debuggee(&tag);
}

#[test]
fn hundreds_of_calls_and_sessions_leave_nothing_behind() {
    if std::env::var_os("DEBUG_MCP_SOAK").is_none() {
        eprintln!("skipped the soak test: set DEBUG_MCP_SOAK=1 to run it (.ci/run does)");
        return;
    }
    let mut server = Server::initialized();
    let pid = server.pid();
    let idle = footprint(pid);
    // Warm-up: the allocator's arenas and the Python helper files settle in the first rounds.
    for _ in 0..5 {
        round(&mut server);
    }
    let settle = |server: &Server| {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let now = footprint(server.pid());
            if now.threads == idle.threads && now.children == 0 {
                return now;
            }
            assert!(
                Instant::now() < deadline,
                "call threads not joined or children not reaped: idle {idle:?}, now {now:?}"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    };
    let warm = settle(&server);
    // 30 rounds: 150 Node calls, 30 with a daemon, 30 Python calls, 60 sessions.
    for _ in 0..30 {
        round(&mut server);
    }
    let end = settle(&server);
    eprintln!("soak: idle {idle:?}, after warm-up {warm:?}, after 30 rounds {end:?}");
    assert_eq!(end.fds, idle.fds, "descriptors left open");
    assert_eq!(end.threads, idle.threads, "threads left running");
    assert_eq!(end.children, 0, "children left (debuggees, adapters or adopted orphans)");
    assert!(
        end.rss_kib <= warm.rss_kib + 1024,
        "memory grew by {} KiB over 30 rounds after warm-up",
        end.rss_kib.saturating_sub(warm.rss_kib)
    );
    let (status, _) = server.close();
    assert!(status.success());
}
