//! Programs that run their files from elsewhere (a container's `/app`, a copy, another host),
//! attached to by their port: `pathMappings` given or guessed, and a file the program has and
//! this machine has not shown `remote:`.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::{json, Value};

use crate::need::npm_packages;
use crate::session::running;
use crate::{assert_no_debuggee, eventually, fixture, tag, tool, Program, Server};

/// `debug-launch` with `arguments`, which stops the attached program in the local `file`: the
/// state.
fn paused_in(server: &mut Server, arguments: Value, file: &str) -> Value {
    let state = tool(server, "debug-launch", arguments);
    assert_eq!(state["state"], "paused", "{state}");
    assert_eq!(state["location"]["file"], file, "{state}");
    state
}

/// A Node program run from a copy of its files elsewhere (as a container sees `/app`),
/// attached to with `pathMappings`: a breakpoint in the local file stops it, and the stop, its
/// stack and its source are the local file's.
#[test]
fn attach_with_path_mappings_to_a_node_program_run_elsewhere() {
    let mut server = Server::initialized();
    let tag = tag();
    let app = std::env::temp_dir().join(format!("dmcp-remote-{tag}")).join("app");
    std::fs::create_dir_all(&app).unwrap();
    std::fs::copy(fixture("hang.js"), app.join("hang.js")).unwrap();
    let remote = app.canonicalize().unwrap().display().to_string();
    let mut command = Command::new("node");
    command.arg("--inspect-brk=127.0.0.1:0").arg(app.join("hang.js")).env("DMCP_TAG", &tag);
    let (program, url) = running(&mut command);
    let arguments = json!({"url": url, "breakpoints": [{"file": fixture("hang.js"), "line": 5}],
                           "pathMappings": [{"remote": remote, "local": "fixtures"}]});
    paused_in(&mut server, arguments, &fixture("hang.js"));
    let stack = tool(&mut server, "debug-stack", json!({}));
    assert_eq!(stack["frames"][0]["file"], fixture("hang.js"), "{stack}");
    tool(&mut server, "debug-stop", json!({}));
    drop(program);
    assert_no_debuggee(&tag);
    std::fs::remove_dir_all(app.parent().unwrap()).unwrap();
}

/// The same without `pathMappings`: the mapping is guessed from the scripts the program loaded
/// (a copy of the breakpoint's file, elsewhere) and said; a file the program has and this
/// machine has not is shown marked `remote:`, and a breakpoint set there by that name stops.
#[test]
fn attach_to_a_node_program_run_elsewhere_guesses_the_mapping() {
    let mut server = Server::initialized();
    let tag = tag();
    let root = std::env::temp_dir().join(format!("dmcp-remote-{tag}"));
    let (app, vendor) = (root.join("app"), root.join("vendor"));
    std::fs::create_dir_all(&app).unwrap();
    std::fs::create_dir_all(&vendor).unwrap();
    std::fs::copy(fixture("remote.js"), app.join("remote.js")).unwrap();
    std::fs::write(
        vendor.join("tick.js"),
        "module.exports = function tick(n) {\n  return n + 1;\n};\n",
    )
    .unwrap();
    let (remote, tick) = (
        app.canonicalize().unwrap().display().to_string(),
        format!("remote:{}/vendor/tick.js", root.canonicalize().unwrap().display()),
    );
    let mut command = Command::new("node");
    command.arg("--inspect-brk=127.0.0.1:0").arg(app.join("remote.js")).env("DMCP_TAG", &tag);
    let (program, url) = running(&mut command);
    let arguments =
        json!({"url": url, "breakpoints": [{"file": fixture("remote.js"), "line": 10}]});
    let state = paused_in(&mut server, arguments, &fixture("remote.js"));
    let fixtures =
        std::path::Path::new(&fixture("remote.js")).parent().unwrap().display().to_string();
    assert_eq!(
        state["pathMappings"],
        json!([{"remote": remote, "local": fixtures, "guessed": true}]),
        "{state}"
    );
    let sessions = tool(&mut server, "debug-sessions", json!({}));
    assert_eq!(sessions["sessions"][0]["pathMappings"], state["pathMappings"], "{sessions}");
    let state = tool(&mut server, "debug-continue", json!({"step": "into"}));
    assert_eq!(
        (&state["location"]["file"], &state["location"]["line"]),
        (&json!(tick), &json!(2)),
        "{state}"
    );
    let stack = tool(&mut server, "debug-stack", json!({}));
    assert_eq!(stack["frames"][1]["file"], fixture("remote.js"), "{stack}");
    tool(&mut server, "debug-breakpoint", json!({"remove": "1"}));
    let set = tool(&mut server, "debug-breakpoint", json!({"file": tick, "line": 2}));
    assert_eq!(set["resolved"][0]["file"], tick.as_str(), "{set}");
    let state = tool(&mut server, "debug-continue", json!({}));
    assert_eq!(state["location"]["file"], tick.as_str(), "{state}");
    assert!(state["hitBreakpoints"].as_array().is_some_and(|h| !h.is_empty()), "{state}");
    tool(&mut server, "debug-stop", json!({}));
    drop(program);
    assert_no_debuggee(&tag);
    std::fs::remove_dir_all(root).unwrap();
}

/// A Node program in a real container (`docker` or `podman`), its files mounted at `/app`, its
/// inspector published on a loopback port: attached without `pathMappings`, the mapping is
/// guessed from its main script, and the breakpoint in the local file stops it. Skipped with a
/// line, even under `DEBUG_MCP_TEST_ALL`, where no container engine answers (CI's machines run
/// none) or no Node image is here nor can be pulled.
#[test]
fn a_node_program_in_a_container_is_debugged_from_here() {
    let engine = ["docker", "podman"]
        .into_iter()
        .find(|engine| Command::new(engine).arg("info").output().is_ok_and(|o| o.status.success()));
    let Some(engine) = engine else {
        crate::need::skip_without("a container engine that answers (`docker info`, `podman info`)");
        return;
    };
    let image = "node:20-slim";
    let have = |args: &[&str]| {
        let status = Command::new(engine).args(args).output();
        status.is_ok_and(|o| o.status.success())
    };
    if !have(&["image", "inspect", image]) && !have(&["pull", image]) {
        crate::need::skip_without(&format!(
            "the {image} image, not here and `{engine} pull` failed"
        ));
        return;
    }
    let port = crate::free_port();
    let name = format!("dmcp-{}", tag());
    let fixtures =
        std::path::Path::new(&fixture("hang.js")).parent().unwrap().display().to_string();
    let started = Command::new(engine)
        .args(["run", "-d", "--rm", "--name", &name, "-p", &format!("127.0.0.1:{port}:9229")])
        .args(["-v", &format!("{fixtures}:/app:ro"), "-w", "/app", image])
        .args(["node", "--inspect-brk=0.0.0.0:9229", "hang.js"])
        .output()
        .unwrap();
    assert!(started.status.success(), "{}", String::from_utf8_lossy(&started.stderr));
    let remove = || drop(Command::new(engine).args(["rm", "-f", &name]).output());
    let mut server = Server::initialized();
    let mut state = json!({});
    eventually(Duration::from_secs(20), "the container's inspector answers", || {
        state = tool(
            &mut server,
            "debug-launch",
            json!({"port": port, "breakpoints": [{"file": fixture("hang.js"), "line": 5}]}),
        );
        state["state"] == "paused"
    });
    remove();
    assert_eq!(state["location"]["file"], fixture("hang.js"), "{state}");
    assert_eq!(
        state["pathMappings"],
        json!([{"remote": "/app", "local": fixtures, "guessed": true}])
    );
    tool(&mut server, "debug-stop", json!({}));
}

/// Runs the shell `command` in a mount namespace of its own (what a container is to paths;
/// `unshare`, as root) where `root` is a tmpfs that `setup` fills: its files are there only.
/// The program and its inspector's URL; `None` (the test skipped with a line) where a mount
/// namespace cannot be made.
fn in_namespace(root: &Path, setup: &str, command: &str, tag: &str) -> Option<(Program, String)> {
    std::fs::create_dir_all(root).unwrap();
    let made = Command::new("unshare")
        .args(["--mount", "--propagation", "private", "true"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !made {
        std::fs::remove_dir_all(root).unwrap();
        crate::need::skip_unless_root("a mount namespace of its own (`unshare --mount`)");
        return None;
    }
    let inside =
        format!("mount -t tmpfs none {root} && {setup} && exec {command}", root = root.display());
    let mut unshare = Command::new("unshare");
    unshare.args(["--mount", "--propagation", "private", "sh", "-c", &inside]).env("DMCP_TAG", tag);
    let started = running(&mut unshare);
    assert!(std::fs::read_dir(root).unwrap().next().is_none(), "the namespace's files are here");
    Some(started)
}

/// The folder a namespace's tmpfs was mounted over, let go once its program ended.
fn remove_namespace_root(root: &Path) {
    eventually(Duration::from_secs(5), "the namespace's folder is let go", || {
        std::fs::remove_dir(root).is_ok()
    });
}

/// A Node program in a mount namespace of its own, its files in a folder that exists only
/// there. Attached without `pathMappings`, the mapping is guessed from its main script's path
/// and the tree under `cwd` (no file of it is here), a breakpoint given in the local tree stops
/// it, and its module outside the mapping is `remote:`, its lines read from the runtime.
#[test]
fn a_node_program_in_its_own_mount_namespace_is_debugged_from_here() {
    let tag = tag();
    let root = std::env::temp_dir().join(format!("dmcp-ns-{tag}"));
    let setup = format!(
        "mkdir {root}/app {root}/vendor && cp {program} {root}/app/ && printf \
         'module.exports = function tick(n) {{\\n  return n + 1;\\n}};\\n' > {root}/vendor/tick.js \
         && cd {root}/app",
        root = root.display(),
        program = fixture("remote.js"),
    );
    let command = "node --inspect-brk=127.0.0.1:0 remote.js";
    let Some((program, url)) = in_namespace(&root, &setup, command, &tag) else { return };
    let mut server = Server::initialized();
    let arguments =
        json!({"url": url, "cwd": "fixtures", "breakpoints": [{"file": "remote.js", "line": 10}]});
    let state = paused_in(&mut server, arguments, &fixture("remote.js"));
    let fixtures = Path::new(&fixture("remote.js")).parent().unwrap().display().to_string();
    let remote = format!("{}/app", root.display());
    assert_eq!(
        state["pathMappings"],
        json!([{"remote": remote, "local": fixtures, "guessed": true}])
    );
    let state = tool(&mut server, "debug-continue", json!({"step": "into"}));
    let tick = format!("remote:{}/vendor/tick.js", root.display());
    assert_eq!(state["location"]["file"], tick.as_str(), "{state}");
    // Its lines, from the runtime: the file is not here.
    assert_eq!(state["source"][1], json!({"line": 2, "text": "  return n + 1;", "current": true}));
    let source = tool(&mut server, "debug-source", json!({"file": tick, "line": 2}));
    assert_eq!(source["lines"][1]["text"], "  return n + 1;", "{source}");
    tool(&mut server, "debug-stop", json!({}));
    drop(program);
    assert_no_debuggee(&tag);
    remove_namespace_root(&root);
}

/// The same for Deno and TypeScript: the sources its inline maps name are where it runs them,
/// mapped here by the guess like its scripts.
#[test]
fn a_deno_program_in_its_own_mount_namespace_is_debugged_from_here() {
    npm_packages();
    let tag = tag();
    let root = std::env::temp_dir().join(format!("dmcp-ns-{tag}"));
    let setup = format!(
        "mkdir {root}/app && cp {orders} {pricing} {root}/app/ && cd {root}/app",
        root = root.display(),
        orders = fixture("deno/orders.ts"),
        pricing = fixture("deno/pricing.ts"),
    );
    let command =
        format!("'{}' run --inspect-brk=127.0.0.1:0 orders.ts", fixture("node_modules/.bin/deno"));
    let Some((program, url)) = in_namespace(&root, &setup, &command, &tag) else { return };
    let mut server = Server::initialized();
    let arguments =
        json!({"url": url, "breakpoints": [{"file": fixture("deno/orders.ts"), "line": 13}]});
    let state = paused_in(&mut server, arguments, &fixture("deno/orders.ts"));
    assert_eq!(state["location"]["line"], 13, "{state}");
    assert_eq!(state["pathMappings"][0]["remote"], format!("{}/app", root.display()), "{state}");
    let state = tool(&mut server, "debug-continue", json!({"step": "into"}));
    assert_eq!(state["location"]["file"], fixture("deno/pricing.ts"), "{state}");
    tool(&mut server, "debug-stop", json!({}));
    drop(program);
    assert_no_debuggee(&tag);
    remove_namespace_root(&root);
}
