//! What the server writes to disk: one private directory per server with a random name, never
//! a path another user could have made first, removed when the server ends (stdin closed,
//! SIGTERM, SIGINT, `debug-mcp-server run`), and a dead server's removed by the next one.
//!
//! Each test gives its server a temporary directory of its own (`TMPDIR`), world-writable and
//! sticky like `/tmp`, so that it can see everything the server leaves there.

use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::json;

use crate::need::{need, Tool};
use crate::{eventually, fixture, node, ok, root, tag, values, Server};

/// A directory standing in for `/tmp`: anyone may write in it (mode 1777), removed on drop.
pub struct SharedTmp(pub PathBuf);

impl SharedTmp {
    pub fn new() -> SharedTmp {
        // Short, as /tmp is: a browser's socket path there must fit in 107 bytes.
        let dir = std::env::temp_dir().join(format!("dm{}", tag()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o1777)).unwrap();
        SharedTmp(dir)
    }

    pub fn env(&self) -> [(&str, &str); 1] {
        [("TMPDIR", self.0.to_str().unwrap())]
    }

    /// The names in it, sorted.
    pub fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(&self.0)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    /// The scratch directories of the server with this pid: `debug-mcp-PID-<16 hex digits>`.
    pub fn scratch_of(&self, pid: u32) -> Vec<PathBuf> {
        let prefix = format!("debug-mcp-{pid}-");
        self.names()
            .into_iter()
            .filter(|n| {
                n.strip_prefix(&prefix).is_some_and(|random| {
                    random.len() == 16 && random.chars().all(|c| c.is_ascii_hexdigit())
                })
            })
            .map(|n| self.0.join(n))
            .collect()
    }
}

impl Drop for SharedTmp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Another user's id to give planted files (as root), else our own (what a directory made in
/// advance by a program of ours would have).
fn another_user(path: &Path) {
    if Command::new("id").arg("-u").output().unwrap().stdout == b"0\n" {
        let status = Command::new("chown").args(["-R", "65534:65534"]).arg(path).status().unwrap();
        assert!(status.success());
    }
}

fn python_script(server: &mut Server, tag: &str) -> serde_json::Value {
    let script = fixture("py/loop.py");
    server.debug_script(json!({
        "command": format!("DMCP_TAG={tag} {} '{script}'", crate::python::python()),
        "breakpoint": {"file": script, "line": 5}, "expression": "total"}))
}

fn node_script(server: &mut Server, tag: &str) -> serde_json::Value {
    server.debug_script(json!({"command": node(tag, "loop.js", ""),
        "breakpoint": {"file": fixture("loop.js"), "line": 5}, "expression": "total"}))
}

#[test]
fn paths_planted_in_advance_are_never_used() {
    let tmp = SharedTmp::new();
    let mut server = Server::initialized_with(&root(), &tmp.env());
    let pid = server.pid();
    // What the server once used, made first by someone else: a module a debugged Python
    // program would import, a symlink a write would follow, the follow channel's directory.
    let victim = tmp.0.join("victim.txt");
    std::fs::write(&victim, "precious\n").unwrap();
    let marker = tmp.0.join("planted-code-ran");
    let python = tmp.0.join(format!("debug-mcp-{pid}-python"));
    std::fs::create_dir(&python).unwrap();
    std::fs::write(
        python.join("json.py"),
        format!("open({:?}, 'w').write('ran')\n", marker.display().to_string()),
    )
    .unwrap();
    std::os::unix::fs::symlink(&victim, python.join("sitecustomize.py")).unwrap();
    std::os::unix::fs::symlink(&victim, python.join("debug_mcp_probe.py")).unwrap();
    std::fs::create_dir(tmp.0.join(format!("debug-mcp-{pid}-follow-0"))).unwrap();
    std::fs::write(tmp.0.join(format!("debug-mcp-{pid}-go-0")), "#!/bin/sh\n").unwrap();
    for planted in [&python, &tmp.0.join(format!("debug-mcp-{pid}-follow-0"))] {
        std::fs::set_permissions(planted, std::fs::Permissions::from_mode(0o777)).unwrap();
        another_user(planted);
    }
    let planted = tmp.names();

    let tag = tag();
    let result = python_script(&mut server, &tag);
    assert_eq!(values(ok(&result)), vec![json!(0), json!(10), json!(25)], "{result}");
    let result = node_script(&mut server, &tag);
    assert_eq!(values(ok(&result)), vec![json!(0), json!(10), json!(25)], "{result}");
    assert!(!marker.exists(), "the planted json.py ran");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");

    // Everything the server wrote is in one new directory of its own, mode 0700.
    let scratch = tmp.scratch_of(pid);
    assert_eq!(scratch.len(), 1, "{:?}", tmp.names());
    let metadata = std::fs::symlink_metadata(&scratch[0]).unwrap();
    assert!(metadata.is_dir());
    assert_eq!(metadata.mode() & 0o777, 0o700);
    let mut all = planted.clone();
    all.push(scratch[0].file_name().unwrap().to_string_lossy().into_owned());
    all.sort();
    assert_eq!(tmp.names(), all);

    let (status, _) = server.close();
    assert!(status.success());
    assert_eq!(tmp.names(), planted, "the scratch directory outlived the server");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
}

#[test]
fn the_scratch_directory_goes_with_the_server_however_it_ends() {
    for signal in ["TERM", "INT"] {
        let tmp = SharedTmp::new();
        let mut server = Server::initialized_with(&root(), &tmp.env());
        let tag = tag();
        ok(&node_script(&mut server, &tag));
        assert_eq!(tmp.scratch_of(server.pid()).len(), 1, "{:?}", tmp.names());
        let status =
            Command::new("kill").arg(format!("-{signal}")).arg(server.pid().to_string()).status();
        assert!(status.unwrap().success());
        assert!(server.wait_exit().success(), "SIG{signal}");
        assert_eq!(tmp.names(), Vec::<String>::new(), "after SIG{signal}");
    }

    // `debug-mcp-server run` too.
    let tmp = SharedTmp::new();
    let output = Command::new(env!("CARGO_BIN_EXE_debug-mcp-server"))
        .args(["run", "--break", &format!("{}:5", fixture("loop.js")), "--eval", "total", "--"])
        .args(["node", &fixture("loop.js")])
        .env("TMPDIR", &tmp.0)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(tmp.names(), Vec::<String>::new());
}

#[test]
fn a_dead_servers_scratch_directory_is_removed_by_the_next() {
    let tmp = SharedTmp::new();
    // pid_max is at most 2^22: these servers are gone.
    let dead = tmp.0.join("debug-mcp-999999999-00ff00ff00ff00ff");
    std::fs::create_dir(&dead).unwrap();
    std::fs::write(dead.join("sitecustomize.py"), "").unwrap();
    let old_style = tmp.0.join("debug-mcp-999999998-python");
    std::fs::create_dir(&old_style).unwrap();
    // A live process's, and one that is not a directory: left alone.
    let live = tmp.0.join(format!("debug-mcp-{}-00ff00ff00ff00ff", std::process::id()));
    std::fs::create_dir(&live).unwrap();
    let file = tmp.0.join("debug-mcp-999999997-x");
    std::fs::write(&file, "").unwrap();
    let mut kept = vec![live.clone(), file.clone()];
    // Another user's (as root): not ours to remove.
    if Command::new("id").arg("-u").output().unwrap().stdout == b"0\n" {
        let theirs = tmp.0.join("debug-mcp-999999996-python");
        std::fs::create_dir(&theirs).unwrap();
        another_user(&theirs);
        kept.push(theirs);
    }
    let server = Server::initialized_with(&root(), &tmp.env());
    eventually(Duration::from_secs(5), "stale scratch directories removed", || {
        !dead.exists() && !old_style.exists()
    });
    for path in &kept {
        assert!(path.exists(), "{} was removed", path.display());
    }
    drop(server);
}

#[test]
fn a_session_of_each_runtime_leaves_nothing_behind() {
    let tmp = SharedTmp::new();
    let mut server = Server::initialized_with(&root(), &tmp.env());
    let tag = tag();
    let python = crate::python::python();
    crate::need::npm_packages();
    let deno = fixture("node_modules/.bin/deno");
    let mut sessions = vec![
        json!({"command": node(&tag, "loop.js", ""),
               "breakpoints": [{"file": fixture("loop.js"), "line": 5}]}),
        json!({"command": format!("DMCP_TAG={tag} {python} {}", fixture("py/loop.py")),
               "breakpoints": [{"file": fixture("py/loop.py"), "line": 5}]}),
        json!({"command": format!("DMCP_TAG={tag} {deno} run {}", fixture("deno/orders.ts")),
               "breakpoints": [{"file": fixture("deno/orders.ts"), "line": 13}]}),
    ];
    // Those whose system packages are here (the others are said skipped).
    if need(Tool::Lldb) {
        let c_loop = crate::native::c_loop();
        sessions.push(json!({"command": format!("DMCP_TAG={tag} {c_loop} 3"),
               "breakpoints": [{"file": fixture("native/c/loop.c"), "line": 15}]}));
    }
    if need(Tool::Delve) {
        sessions.push(
            json!({"command": "go run .", "cwd": fixture("native/go"), "env": {"DMCP_TAG": tag},
               "breakpoints": [{"file": fixture("native/go/main.go"), "line": 16}],
               "timeout": 120000}),
        );
    }
    if need(Tool::Chromium) {
        sessions.push(json!({"url": fixture("web/static/index.html"), "env": {"DMCP_TAG": tag},
               "breakpoints": [{"file": fixture("web/static/cart.js"), "line": 4}]}));
    }
    for arguments in sessions {
        let state = crate::tool(&mut server, "debug-launch", arguments.clone());
        assert_eq!(state["state"], "paused", "{arguments}: {state}");
        assert_eq!(tmp.scratch_of(server.pid()).len(), 1, "{:?}", tmp.names());
        let stopped = crate::tool(&mut server, "debug-stop", json!({}));
        assert_eq!(stopped["stopped"], true, "{stopped}");
    }
    let (status, _) = server.close();
    assert!(status.success());
    crate::assert_no_debuggee(&tag);
    assert_eq!(tmp.names(), Vec::<String>::new());
}

/// Our Python modules compiled by one server (and sitecustomize.py's .pyc) are kept in this
/// user's cache for the next (`$XDG_CACHE_HOME/debug-mcp/python-HASH/`), and read from there
/// only while every folder on the way is the user's own and no one else may write it.
#[test]
fn python_code_compiled_once_is_kept_for_the_next_server() {
    let tmp = SharedTmp::new();
    let cache = tmp.0.join("cache");
    std::fs::DirBuilder::new().mode(0o700).create(&cache).unwrap();
    let python = crate::python::python();
    let work = fixture("calls/work.py");
    let run = || {
        let output = Command::new(env!("CARGO_BIN_EXE_debug-mcp-server"))
            .args(["run", "--calls", &format!("{work}:nothing"), "--", &python, &work])
            .env("XDG_CACHE_HOME", &cache)
            .env("TMPDIR", &tmp.0)
            .current_dir(root())
            .output()
            .unwrap();
        let printed: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        assert_eq!(printed["exitCode"], 0, "{printed}");
        printed["output"]["stderr"].as_str().unwrap().to_string()
    };
    run();
    let ours = cache.join("debug-mcp");
    let folders: Vec<PathBuf> =
        std::fs::read_dir(&ours).unwrap().flatten().map(|e| e.path()).collect();
    assert_eq!(folders.len(), 1, "{folders:?}");
    let kept = &folders[0];
    assert!(kept.file_name().unwrap().to_str().unwrap().starts_with("python-"), "{kept:?}");
    let tag = Command::new(&python)
        .args([
            "-c",
            "import sys, importlib.util as u; \
                      print(sys.implementation.cache_tag + '-' + u.MAGIC_NUMBER.hex())",
        ])
        .output()
        .unwrap()
        .stdout;
    let tag = String::from_utf8(tag).unwrap().trim().to_string();
    let site = kept.join(format!("debug_mcp_site.{tag}.code"));
    assert!(site.is_file() && kept.join(format!("debug_mcp_trace.{tag}.code")).is_file());
    assert_eq!(std::fs::metadata(kept).unwrap().mode() & 0o777, 0o700);

    // Code compiled in another server's directory is known as ours in this one's: a hang
    // report shows the program's frames only.
    // (The second run reads the hang report's module as the first kept it.)
    let deadlock = fixture("hangs/deadlock.py");
    for _ in 0..2 {
        let output = Command::new(env!("CARGO_BIN_EXE_debug-mcp-server"))
            .args(["run", "--timeout", "1000", "--", &python, &deadlock])
            .env("XDG_CACHE_HOME", &cache)
            .env("TMPDIR", &tmp.0)
            .output()
            .unwrap();
        let printed: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        let threads = printed["hang"]["threads"].as_array().unwrap();
        assert_eq!(threads.len(), 3, "{printed}");
        for thread in threads {
            assert_eq!(thread["frames"][0]["file"], deadlock.as_str(), "{printed}");
        }
    }
    assert!(kept.join(format!("debug_mcp_hang.{tag}.code")).is_file());

    // The next server runs what is kept (here, code that says so): our modules' code, and
    // sitecustomize.py's, read by Python's import (an unchecked .pyc).
    let plant = |marker: &str, source: &str, write: &str, into: &Path| {
        let source = std::fs::read_to_string(root().join("src/python").join(source)).unwrap();
        let marked = format!("import sys\nsys.stderr.write('{marker}\\n')\n{source}");
        let status = Command::new(&python).args(["-c", write, &marked]).arg(into).status();
        assert!(status.unwrap().success());
        assert_eq!(run(), format!("{marker}\n"));
    };
    plant(
        "kept code ran",
        "site.py",
        "import marshal, sys; marshal.dump(compile(sys.argv[1], 'site', 'exec'), \
         open(sys.argv[2], 'wb'))",
        &site,
    );
    let (cache_tag, _) = tag.rsplit_once('-').unwrap();
    let pyc = kept.join(format!("sitecustomize.{cache_tag}.pyc"));
    assert!(pyc.is_file(), "{pyc:?}");
    std::fs::copy(root().join("src/python/site.py"), &site).unwrap(); // not code: made again
    plant(
        "kept pyc ran",
        "sitecustomize.py",
        "import sys, importlib._bootstrap_external as b, importlib.util as u; \
         code = compile(sys.argv[1], 'sitecustomize', 'exec'); \
         open(sys.argv[2], 'wb').write(b._code_to_hash_pyc(code, \
         u.source_hash(sys.argv[1].encode()), False))",
        &pyc,
    );
    // Not from a folder others may write: then nothing is read (and nothing kept there).
    std::fs::set_permissions(kept, std::fs::Permissions::from_mode(0o770)).unwrap();
    assert_eq!(run(), "");
    std::fs::set_permissions(kept, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::set_permissions(&ours, std::fs::Permissions::from_mode(0o777)).unwrap();
    assert_eq!(run(), "");
    assert_eq!(tmp.names(), vec!["cache".to_string()], "no scratch directory left");
}
