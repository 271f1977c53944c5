//! Starting Node under the inspector: reading and rewriting the command's inspector flags,
//! cleaning `NODE_OPTIONS`, and finding the exact WebSocket URL the child prints.
//!
//! Facts this relies on (observed on Node 20): `--inspect-brk` waits for a debugger before the first
//! line; the URL (with a random UUID) appears on stderr as `Debugger listening on ws://...`; when
//! the port is taken Node says so on stderr and runs the script WITHOUT a debugger, so connecting
//! to the port blindly could debug someone else's process.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crossbeam_channel::{select, Receiver};

use serde_json::{json, Value};

use crate::cdp::follow;
use crate::cdp::runtime::{Follow, Inner, Runtime, Started, UrlForm};
use crate::cdp::{Client, Event, Relay};
use crate::debugger::model::Undebugged;
use crate::debugger::{Code, Failure};
use crate::log;
use crate::process::{self, Debuggee, Exit, SpawnError};
use crate::shell::CommandLine;

/// What to run and where its inspector will listen.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Launch {
    pub(crate) spec: process::Spec,
    /// The inspector address the command asked for (`None` when we chose port 0).
    pub(crate) requested: Option<String>,
    /// Whether the program is Node itself; otherwise we cannot add a flag and can only hope the
    /// command starts Node with one.
    pub(crate) is_node: bool,
    /// The script Node runs (the first argument after its options), when there is one.
    pub(crate) entry: Option<String>,
    /// Whether we added the inspector flag (the command had none).
    pub(crate) inserted: bool,
}

impl Launch {
    /// Whether the started process opens an inspector of its own, whose URL it prints.
    fn own_inspector(&self) -> bool {
        self.inserted || self.requested.is_some()
    }
}

/// The bootloader followed programs load (`--require` in `NODE_OPTIONS`).
const BOOT: &str = include_str!("boot.js");
const BOOT_NAME: &str = "boot.js";

/// `NODE_OPTIONS` words that load the bootloader at `boot` (quoted: Node splits the value at
/// spaces outside double quotes).
fn require_boot(boot: &Path) -> String {
    let boot = boot.display().to_string();
    format!("--require \"{}\"", boot.replace('\\', "\\\\").replace('"', "\\\""))
}

/// Node options that take their value as the next word.
const OPTIONS_WITH_VALUE: &[&str] = &[
    "-r",
    "--require",
    "--import",
    "--loader",
    "--experimental-loader",
    "-C",
    "--conditions",
    "--title",
    "--input-type",
    "--env-file",
    "--stack-size",
    "--max-old-space-size",
];

/// The flag inserted when the command has none. `--inspect-wait` (Node 20.15 and 22.2 on)
/// waits for the debugger without the initial pause `--inspect-brk` makes, one round trip less;
/// older Node refuses it ([`refused_wait_flag`]) and gets `--inspect-brk`.
pub(crate) const WAIT_FLAG: &str = "--inspect-wait=0";
pub(crate) const BRK_FLAG: &str = "--inspect-brk=0";

/// The longest a request to the inspector may take while connecting.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// Evaluated in a launched program while it waits for the debugger, before Node has set
/// `process.execArgv`: children it forks (`child_process.fork` passes `process.execArgv`) would
/// otherwise inherit our inspector flag and wait for a debugger that never comes. An accessor
/// catches Node's own assignment (`process->Set` in `PatchProcessObject`) and keeps the array
/// without inspector flags, as a plain property again; so children start without them (and
/// are followed through the bootloader when the run follows them). Where the array is already
/// set, it is filtered in place. The process is marked (a non-enumerable symbol on `process`)
/// so that the bootloader knows it has its debugger without reading the flags this removes:
/// otherwise it loads `inspector` to ask, 27 of Node's modules the debugger then reports
/// and hashes (2-3 ms of a run).
pub(crate) const UNINHERIT_INSPECTOR: &str = r#"(() => {
  Object.defineProperty(process, Symbol.for('debug-mcp.inspected'), {value: true});
  const inspector = /^--(inspect(-brk|-wait|-port|-publish-uid)?|debug-port)(=|$)/;
  if (Array.isArray(process.execArgv)) {
    process.execArgv = process.execArgv.filter((a) => !inspector.test(a));
    return true;
  }
  Object.defineProperty(process, 'execArgv', {
    configurable: true,
    enumerable: true,
    set(argv) {
      const kept = Array.isArray(argv) ? argv.filter((a) => !inspector.test(a)) : argv;
      Object.defineProperty(process, 'execArgv',
        {value: kept, writable: true, configurable: true, enumerable: true});
    },
  });
  return true;
})()"#;

/// A worker inherits the parent's `--inspect-wait` and waits for a debugger of its own even when
/// `NodeWorker.enable` said it need not. Lets a worker that waits for its debugger run undebugged, and detaches from it: until
/// workers are debugged, their code runs as it would without debug-mcp.
fn release_worker(client: &mut Client, attached: &Value) {
    let session = attached["sessionId"].clone();
    let run = r#"{"id":1,"method":"Runtime.runIfWaitingForDebugger"}"#;
    let message = json!({"sessionId": session, "message": run});
    drop(client.send("NodeWorker.sendMessageToWorker", message));
    drop(client.send("NodeWorker.detach", json!({"sessionId": session})));
}

/// Whether Node's stderr says it does not know `--inspect-wait`.
pub(crate) fn refused_wait_flag(stderr: &str) -> bool {
    stderr.contains("bad option: --inspect-wait")
}

/// `follow`: the bootloader and the channel its processes report on, when every Node process of
/// the program is followed.
pub(crate) fn prepare(
    command: CommandLine,
    node_options: Option<String>,
    flag: &str,
    follow: Option<(&Path, &str)>,
) -> Result<Launch, String> {
    let CommandLine { mut env, words, cwd, stdin, .. } = command;
    let mut words = words.into_iter();
    let program = words.next().expect("shell::split never returns an empty command");
    let mut args: Vec<String> = words.collect();
    let is_node = is_node(&program);
    let mut requested = None;
    let mut found = false;
    let mut entry = None;
    let mut test_runner = false;
    let mut index = 0;
    while index < args.len() {
        let arg = &args[index];
        if arg == "--" || arg == "-" {
            entry = args.get(index + 1).filter(|_| arg == "--").cloned();
            break;
        }
        if !arg.starts_with('-') {
            entry = Some(arg.clone());
            break;
        }
        if arg.split('=').next() == Some(PUBLISH_FLAG) {
            // Ours, in NODE_OPTIONS, says where the inspector's address goes: stderr alone.
            let separate = !arg.contains('=') && index + 1 < args.len();
            args.drain(index..index + 1 + usize::from(separate));
            continue;
        }
        if let Some(value) = inspector_flag(arg) {
            let address = check_address(value)?;
            requested = Some(address.clone());
            // `--inspect` alone would let the program run before we attach, losing early hits.
            args[index] = format!("--inspect-brk={address}");
            found = true;
        } else if matches!(arg.as_str(), "-e" | "--eval" | "-p" | "--print") {
            break;
        } else if arg == "--test" {
            // Node's test runner never opens an inspector in its own process; it runs each
            // test file in a child and hands inspector flags to those, which would make them
            // fight over one port. None is added: followed, every process reports through the
            // bootloader instead.
            test_runner = true;
        } else if OPTIONS_WITH_VALUE.contains(&arg.as_str()) {
            index += 1;
        }
        index += 1;
    }
    if test_runner && found {
        // Followed, the runner's children open inspectors of their own on free ports.
        args.retain(|arg| inspector_flag(arg).is_none());
        requested = None;
    }
    let inserted = !found && is_node && !test_runner;
    if inserted {
        args.insert(0, flag.to_string());
    }
    // Inspector flags in NODE_OPTIONS would make every child node process wait for, or fight
    // over, the inspector port. Strip them, whether inherited or set on the command line.
    let from_command = env.iter().position(|(k, _)| k == "NODE_OPTIONS");
    let options = match from_command {
        Some(i) => Some(env.remove(i).1),
        None => node_options,
    };
    // Every Node process of the program publishes its inspector's address on its stderr alone,
    // never at `/json/list` too: any local user can read that, connect, and run code as this
    // user (the inspector asks nothing of whoever connects). The address on stderr, or in the
    // bootloader's report on our private pipe, is read by us alone.
    let own = options.as_deref().map(strip_inspector_options).unwrap_or_default();
    let mut kept = format!("{PUBLISH_FLAG}=stderr {own}").trim_end().to_string();
    if let Some((boot, channel)) = follow {
        kept = [kept, require_boot(boot)].join(" ");
        env.push((follow::CHANNEL_VAR.to_string(), channel.to_string()));
    }
    env.push(("NODE_OPTIONS".to_string(), kept));
    // Relative to where the program runs, for the source maps looked for beside it.
    let entry = entry.filter(|_| is_node).map(|entry| match &cwd {
        Some(cwd) => cwd.join(entry).display().to_string(),
        None => entry,
    });
    Ok(Launch {
        spec: process::Spec { program, args, env, env_remove: Vec::new(), cwd, stdin },
        requested,
        is_node,
        entry,
        inserted,
    })
}

fn is_node(program: &str) -> bool {
    let name = Path::new(program).file_name().and_then(|n| n.to_str()).unwrap_or_default();
    let name = name.strip_suffix(".exe").unwrap_or(name);
    name == "node"
        || name == "nodejs"
        || name
            .strip_prefix("node")
            .is_some_and(|v| v.chars().all(|c| c.is_ascii_digit() || c == '.') && !v.is_empty())
}

/// Where the inspector's address is published (Node's default: `stderr,http`).
const PUBLISH_FLAG: &str = "--inspect-publish-uid";

/// The value of `--inspect-brk[=v]`, `--inspect[=v]` or `--inspect-wait[=v]`.
fn inspector_flag(arg: &str) -> Option<&str> {
    let (flag, value) = arg.split_once('=').unwrap_or((arg, ""));
    matches!(flag, "--inspect-brk" | "--inspect" | "--inspect-wait").then_some(value)
}

/// Checks `[host:]port` and returns it as `host:port`. Only loopback hosts are accepted: an
/// inspector lets whoever connects run code as this user.
pub(crate) fn check_address(value: &str) -> Result<String, String> {
    let (host, port) = if value.is_empty() {
        ("127.0.0.1", "9229")
    } else if value.chars().all(|c| c.is_ascii_digit()) {
        ("127.0.0.1", value)
    } else if let Some((host, port)) =
        value.rsplit_once(':').filter(|(h, _)| !h.is_empty() && !h.ends_with(':'))
    {
        (host, port)
    } else {
        (value, "9229")
    };
    let port: u16 = port.parse().map_err(|_| {
        format!("inspector port `{port}` in `{value}` is not a port number (0-65535)")
    })?;
    if !crate::net::is_loopback(host) {
        return Err(format!(
            "inspector host `{host}` is not a loopback address: an inspector open to the network \
             lets anyone who connects run code as this user. Use 127.0.0.1, or drop the flag and \
             let debug-mcp pick a free local port"
        ));
    }
    Ok(format!("{host}:{port}"))
}

/// Removes `--inspect*` and `--debug-port` options from a NODE_OPTIONS value.
pub(crate) fn strip_inspector_options(options: &str) -> String {
    let mut kept = Vec::new();
    let mut words = options.split_ascii_whitespace();
    while let Some(word) = words.next() {
        let flag = word.split_once('=').map_or(word, |(f, _)| f);
        if flag.starts_with("--inspect") || flag == "--debug-port" {
            if !word.contains('=') && (flag == "--inspect-port" || flag == "--debug-port") {
                words.next();
            }
            continue;
        }
        kept.push(word);
    }
    kept.join(" ")
}

/// Whether a stderr line is the inspector's own (kept out of the program's output); also as
/// Node's test runner echoes a child's stderr, a TAP comment (`# Debugger attached.`).
pub(crate) fn is_inspector_line(line: &str) -> bool {
    let line = line.strip_prefix("# ").unwrap_or(line);
    const PREFIXES: &[&str] = &[
        "Debugger listening on ws://",
        "For help, see: https://nodejs.org/en/docs/inspector",
        "Debugger attached.",
        "Waiting for the debugger to disconnect...",
        "Debugger ending on ws://",
        "Starting inspector on ",
    ];
    PREFIXES.iter().any(|p| line.starts_with(p))
}

#[derive(Debug, PartialEq)]
pub(crate) enum Discovery {
    /// The program exited before its inspector listened.
    Exited(Exit),
    /// The inspector could not listen on the requested port: it is taken.
    PortInUse(String),
    /// The inspector failed for another reason (Node's own words).
    Failed(String),
    TimedOut,
    Cancelled,
}

/// Waits for the next `Debugger listening on ws://...` line on the child's stderr and returns
/// its URL. The program's children share its stderr: the caller checks whose it is.
pub(crate) fn discover(
    debuggee: &mut Debuggee,
    deadline: Instant,
    cancel: &Receiver<()>,
) -> Result<String, Discovery> {
    let timeout = crossbeam_channel::at(deadline);
    loop {
        select! {
            recv(debuggee.notices()) -> line => match line {
                Ok(line) => {
                    if let Some(url) = line.strip_prefix("Debugger listening on ") {
                        return Ok(url.trim().to_string());
                    }
                    if let Some(failure) = inspector_failure(&line) {
                        return Err(failure);
                    }
                }
                // stderr closed: the program is ending; its exit follows.
                Err(_) => return Err(exited(debuggee, None)),
            },
            recv(debuggee.exited()) -> exit => return Err(exited(debuggee, exit.ok())),
            recv(timeout) -> _ => return Err(Discovery::TimedOut),
            recv(cancel) -> _ => return Err(Discovery::Cancelled),
        }
    }
}

/// Records the exit and reports it, unless a failure line printed just before it explains more.
fn exited(debuggee: &mut Debuggee, exit: Option<Exit>) -> Discovery {
    let exit = exit
        .or_else(|| debuggee.exited().recv_timeout(Duration::from_secs(5)).ok())
        .unwrap_or(Exit { code: None, signal: None });
    debuggee.record_exit(exit);
    while let Ok(line) = debuggee.notices().recv_timeout(Duration::from_millis(100)) {
        if let Some(failure) = inspector_failure(&line) {
            return failure;
        }
    }
    Discovery::Exited(exit)
}

/// `Starting inspector on 127.0.0.1:9229 failed: address already in use` and its kin.
fn inspector_failure(line: &str) -> Option<Discovery> {
    let rest = line.strip_prefix("Starting inspector on ")?;
    let address = rest.split(" failed").next().unwrap_or(rest).to_string();
    Some(if line.contains("address already in use") {
        Discovery::PortInUse(address)
    } else {
        Discovery::Failed(line.to_string())
    })
}

/// Spawns a command under the inspector (`flag` when it has no inspector flag of its own,
/// `--inspect-brk` when this Node refuses `--inspect-wait`) and connects to its inspector. A
/// followed command that opens no inspector of its own (`npm test`, `node --test`) is only
/// spawned: its processes report through the channel.
fn start_node(
    command: &CommandLine,
    flag: &str,
    follow: Option<&Follow>,
    timeout: Duration,
    deadline: Instant,
    cancel: &Receiver<()>,
) -> Result<(Launch, Debuggee, Option<Client>), Failure> {
    let channel = follow.and_then(|f| f.channel);
    let boot = channel.map(|c| (c.boot(BOOT_NAME), c.path()));
    let prepare = |flag| {
        let follow = boot.as_ref().map(|(boot, pipe)| (boot.as_path(), pipe.as_str()));
        prepare(command.clone(), std::env::var("NODE_OPTIONS").ok(), flag, follow)
            .map_err(|message| Failure::new(Code::InvalidCommand, message))
    };
    let spawn = |launch: &Launch| {
        let mut debuggee =
            Debuggee::spawn(&launch.spec, is_inspector_line).map_err(|e| match e {
                SpawnError::NotFound(_) => Failure::new(Code::CommandNotFound, e.to_string()),
                SpawnError::Other(..) => Failure::new(Code::SpawnFailed, e.to_string()),
            })?;
        if channel.is_some() && !launch.own_inspector() {
            return Ok((debuggee, Ok(Ok(None))));
        }
        let found = connect_own(&mut debuggee, follow, deadline, cancel);
        Ok::<_, Failure>((debuggee, found.map(|found| found.map(Some))))
    };
    let mut launch = prepare(flag)?;
    let (mut debuggee, mut found) = spawn(&launch)?;
    if let Err(Discovery::Exited(_)) = found {
        if launch.inserted && refused_wait_flag(&debuggee.output().stderr_text()) {
            log::debug(format_args!("this node has no --inspect-wait; using --inspect-brk"));
            launch = prepare(BRK_FLAG)?;
            (debuggee, found) = spawn(&launch)?;
        }
    }
    match found {
        Ok(Ok(client)) => Ok((launch, debuggee, client)),
        Ok(Err(message)) => Err(Failure::new(Code::InspectorFailed, message)),
        Err(discovery) => Err(discovery_failure(discovery, &launch, timeout, &mut debuggee)),
    }
}

/// Connects to the inspector of the process we started. The program's children share its
/// stderr, and one that inherited an inspector flag prints its own `Debugger listening` line,
/// maybe first (`node --inspect-wait --test` runs every test file in a child): an inspector
/// whose default context names another pid is a child's, never taken for the program; it is
/// let go undebugged, and the search goes on.
fn connect_own(
    debuggee: &mut Debuggee,
    follow: Option<&Follow>,
    deadline: Instant,
    cancel: &Receiver<()>,
) -> Result<Result<Client, String>, Discovery> {
    loop {
        let url = discover(debuggee, deadline, cancel)?;
        log::debug(format_args!("inspector at {url}"));
        let left = deadline.saturating_duration_since(Instant::now()).min(REQUEST_TIMEOUT);
        let connected = Follow::connect(follow, &url, left);
        let mut client = match connected {
            Ok(client) => client,
            Err(message) => return Ok(Err(message)),
        };
        let events = follow.map_or(client.events(), |f| f.received).clone();
        // Enabling Runtime reports the default context, named `node[PID]` (Node's
        // GetHumanReadableProcessName), before it answers; `process.pid` is not set yet while
        // Node waits for us. Setup enables Runtime again, which is harmless.
        let enabled = client.send("Runtime.enable", json!({})).recv_timeout(left);
        let pid = enabled.ok().and_then(|_| {
            events.try_iter().find_map(|event| {
                let name = event.params.pointer("/context/name")?.as_str()?;
                let digits = name.strip_suffix(']')?.rsplit_once('[')?.1;
                digits.parse::<u32>().ok()
            })
        });
        if pid.is_none_or(|pid| pid == debuggee.pid()) {
            return Ok(Ok(client));
        }
        log::debug(format_args!("{url} is a child's (pid {pid:?}): letting it run"));
        let running = client.send("Runtime.runIfWaitingForDebugger", json!({}));
        let _ = running.recv_timeout(left);
        client.close();
        events.try_iter().for_each(drop);
    }
}

fn discovery_failure(
    discovery: Discovery,
    launch: &Launch,
    timeout: Duration,
    debuggee: &mut Debuggee,
) -> Failure {
    let output = debuggee.output().to_json();
    match discovery {
        Discovery::Cancelled => Failure::Cancelled,
        Discovery::PortInUse(address) => Failure::new(
            Code::PortInUse,
            format!(
                "inspector port {address} is already in use (another debugger or Node process \
                 holds it): drop the --inspect-brk flag from the command and debug-mcp picks a \
                 free port"
            ),
        ),
        Discovery::Failed(line) => Failure::new(Code::InspectorFailed, format!("Node could not start its inspector: {line}")),
        Discovery::Exited(exit) if launch.is_node => {
            let undebugged = Undebugged { processes: debuggee.descendants(None), workers: 0 };
            let hint = undebugged.describe().map(|what| {
                format!(
                    "the program ended without opening its own inspector (Node's test runner \
                     never does); it ran {what} outside the debugger: if the line ran there, \
                     its hits were not seen. Run the code in the process debug-mcp starts, \
                     e.g. the test file itself: `node path/to/file.test.js`"
                )
            });
            let failure = exited_before_hit(exit.describe(), hint)
                .with("exitCode", exit.code.map_or(Value::Null, Value::from))
                .with("output", output);
            undebugged.add_to(failure)
        }
        Discovery::Exited(exit) => Failure::new(
            Code::NoInspector,
            format!(
                "the command exited ({}) without opening a Node inspector: run a node script \
                 directly, e.g. `node app.js`, or make the command start node with --inspect-brk",
                exit.describe()
            ),
        )
        .with("output", output),
        Discovery::TimedOut => crate::debugger::script::timeout_failure(timeout)
            .with("hint", "the command never opened a Node inspector (no `Debugger listening on ws://` line on its stderr): run a node script directly, e.g. `node app.js`".into())
            .with("output", output),
    }
}

fn exited_before_hit(how: String, hint: Option<String>) -> Failure {
    let failure = Failure::new(Code::Exited, "Process exited before breakpoint was hit")
        .with("exit", how.into());
    match hint {
        Some(hint) => failure.with("hint", hint.into()),
        None => failure,
    }
}

/// Node, as a CDP runtime.
#[derive(Clone, Default)]
pub(crate) struct Node {
    /// Where an attached program's files are here (`pathMappings`, given or guessed).
    pub(crate) files: crate::cdp::urls::Files,
}

impl Runtime for Node {
    fn boxed(&self) -> Box<dyn Runtime> {
        Box::new(self.clone())
    }

    fn language(&self) -> &'static str {
        "node"
    }

    fn urls(&self) -> UrlForm {
        self.files.form()
    }

    fn map_paths(&mut self, mapping: crate::debugger::model::PathMapping) {
        self.files.map(mapping);
    }

    fn ready_event(&self) -> Option<&'static str> {
        Some("NodeRuntime.waitingForDebugger")
    }

    fn is_end(&mut self, event: &Event) -> bool {
        event.method == "NodeRuntime.waitingForDisconnect"
    }

    fn boot(&self) -> Option<(&'static str, &'static str)> {
        Some((BOOT_NAME, BOOT))
    }

    fn relay(&self) -> Option<Relay> {
        Some(Relay {
            send: "NodeWorker.sendMessageToWorker",
            receive: "NodeWorker.receivedMessageFromWorker",
        })
    }

    fn start(
        &self,
        command: &CommandLine,
        stop_at_entry: bool,
        follow: Option<Follow>,
        timeout: Duration,
        deadline: Instant,
        cancel: &Receiver<()>,
    ) -> Result<Started, Failure> {
        // --inspect-brk stops at the first line; --inspect-wait does not.
        let flag = if stop_at_entry { BRK_FLAG } else { WAIT_FLAG };
        let (launch, debuggee, client) =
            start_node(command, flag, follow.as_ref(), timeout, deadline, cancel)?;
        Ok(Started {
            debuggee,
            client,
            entry: launch.entry.map(PathBuf::from),
            program: launch.spec.program,
        })
    }

    fn setup_requests(&self, own: bool, follow: bool, _probe: &str) -> Vec<(&'static str, Value)> {
        let mut requests = vec![
            ("NodeRuntime.enable", json!({})),
            ("NodeRuntime.notifyWhenWaitingForDisconnect", json!({"enabled": true})),
            ("NodeWorker.enable", json!({"waitForDebuggerOnStart": follow})),
        ];
        // Only a program we start: an attached one's children are its own business.
        if own {
            let params = json!({"expression": UNINHERIT_INSPECTOR, "returnByValue": true});
            requests.push(("Runtime.evaluate", params));
        }
        requests
    }

    fn inner_started(&self, event: &Event) -> Option<Inner> {
        if event.method != "NodeWorker.attachedToWorker" || event.origin.session.is_some() {
            return None;
        }
        let session = event.params["sessionId"].as_str()?.to_string();
        let info = &event.params["workerInfo"];
        let name = info["title"].as_str().or(info["workerId"].as_str()).unwrap_or("worker");
        Some(Inner { session, name: name.to_string() })
    }

    fn inner_ended<'e>(&self, event: &'e Event) -> Option<&'e str> {
        if event.method != "NodeWorker.detachedFromWorker" {
            return None;
        }
        event.params["sessionId"].as_str()
    }

    fn on_event(&self, client: &mut Client, event: &Event) -> bool {
        if event.method != "NodeWorker.attachedToWorker" {
            return false;
        }
        release_worker(client, &event.params);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shell;

    fn check(line: &str, node_options: Option<&str>, expected: &str) {
        let got = match prepare(
            shell::split(line).unwrap(),
            node_options.map(String::from),
            BRK_FLAG,
            None,
        ) {
            Ok(l) => format!(
                "{} {:?} env={:?} remove={:?} requested={:?} node={}{}",
                l.spec.program,
                l.spec.args,
                l.spec.env,
                l.spec.env_remove,
                l.requested,
                l.is_node,
                l.entry.map(|e| format!(" entry={e}")).unwrap_or_default()
            ),
            Err(e) => format!("error: {}", e.split(':').next().unwrap()),
        };
        assert_eq!(got, expected, "line: {line}");
    }

    #[test]
    fn prepares_commands() {
        // Node's test runner opens no inspector of its own: no flag is added.
        check(
            "node --test t/",
            None,
            r#"node ["--test", "t/"] env=[("NODE_OPTIONS", "--inspect-publish-uid=stderr")] remove=[] requested=None node=true entry=t/"#,
        );
        // The user's inspector flag too: every test file's process would take it, on one port.
        check(
            "node --inspect-wait=0 --test t/",
            None,
            r#"node ["--test", "t/"] env=[("NODE_OPTIONS", "--inspect-publish-uid=stderr")] remove=[] requested=None node=true entry=t/"#,
        );
        check(
            "node a.js x",
            None,
            r#"node ["--inspect-brk=0", "a.js", "x"] env=[("NODE_OPTIONS", "--inspect-publish-uid=stderr")] remove=[] requested=None node=true entry=a.js"#,
        );
        check(
            "/usr/bin/node --inspect-brk=9230 a.js",
            None,
            r#"/usr/bin/node ["--inspect-brk=127.0.0.1:9230", "a.js"] env=[("NODE_OPTIONS", "--inspect-publish-uid=stderr")] remove=[] requested=Some("127.0.0.1:9230") node=true entry=a.js"#,
        );
        check(
            "node --inspect-brk a.js",
            None,
            r#"node ["--inspect-brk=127.0.0.1:9229", "a.js"] env=[("NODE_OPTIONS", "--inspect-publish-uid=stderr")] remove=[] requested=Some("127.0.0.1:9229") node=true entry=a.js"#,
        );
        check(
            "node --inspect=localhost:0 a.js",
            None,
            r#"node ["--inspect-brk=localhost:0", "a.js"] env=[("NODE_OPTIONS", "--inspect-publish-uid=stderr")] remove=[] requested=Some("localhost:0") node=true entry=a.js"#,
        );
        check(
            "node --inspect-brk=[::1]:9333 a.js",
            None,
            r#"node ["--inspect-brk=[::1]:9333", "a.js"] env=[("NODE_OPTIONS", "--inspect-publish-uid=stderr")] remove=[] requested=Some("[::1]:9333") node=true entry=a.js"#,
        );
        check(
            "node a.js --inspect-brk=1",
            None,
            r#"node ["--inspect-brk=0", "a.js", "--inspect-brk=1"] env=[("NODE_OPTIONS", "--inspect-publish-uid=stderr")] remove=[] requested=None node=true entry=a.js"#,
        );
        check(
            "node -r ./x.js --inspect-brk=5 a.js",
            None,
            r#"node ["-r", "./x.js", "--inspect-brk=127.0.0.1:5", "a.js"] env=[("NODE_OPTIONS", "--inspect-publish-uid=stderr")] remove=[] requested=Some("127.0.0.1:5") node=true entry=a.js"#,
        );
        check(
            "FOO=1 node a.js",
            Some("--inspect --max-old-space-size=100"),
            r#"node ["--inspect-brk=0", "a.js"] env=[("FOO", "1"), ("NODE_OPTIONS", "--inspect-publish-uid=stderr --max-old-space-size=100")] remove=[] requested=None node=true entry=a.js"#,
        );
        check(
            "node a.js",
            Some("--inspect-brk=9229"),
            r#"node ["--inspect-brk=0", "a.js"] env=[("NODE_OPTIONS", "--inspect-publish-uid=stderr")] remove=[] requested=None node=true entry=a.js"#,
        );
        check(
            "NODE_OPTIONS='--inspect-port 9 -r x' node a.js",
            Some("--foo"),
            r#"node ["--inspect-brk=0", "a.js"] env=[("NODE_OPTIONS", "--inspect-publish-uid=stderr -r x")] remove=[] requested=None node=true entry=a.js"#,
        );
        check(
            "node --inspect-publish-uid=http --inspect-publish-uid stderr,http a.js",
            Some("--inspect-publish-uid=http"),
            r#"node ["--inspect-brk=0", "a.js"] env=[("NODE_OPTIONS", "--inspect-publish-uid=stderr")] remove=[] requested=None node=true entry=a.js"#,
        );
        check(
            "npm test",
            None,
            r#"npm ["test"] env=[("NODE_OPTIONS", "--inspect-publish-uid=stderr")] remove=[] requested=None node=false"#,
        );
        check(
            "node22 a.js",
            None,
            r#"node22 ["--inspect-brk=0", "a.js"] env=[("NODE_OPTIONS", "--inspect-publish-uid=stderr")] remove=[] requested=None node=true entry=a.js"#,
        );
        check(
            "node --inspect-brk=0.0.0.0:9229 a.js",
            None,
            "error: inspector host `0.0.0.0` is not a loopback address",
        );
        check(
            "node --inspect-brk=example.com:9229 a.js",
            None,
            "error: inspector host `example.com` is not a loopback address",
        );
        check(
            "node --inspect-brk=99999 a.js",
            None,
            "error: inspector port `99999` in `99999` is not a port number (0-65535)",
        );
    }
}
