//! The session tools: debug the way people do, across calls. `debug-launch` starts a program
//! and stops at a breakpoint; `debug-continue`, `debug-step` and `debug-pause` move it and
//! return where it stopped; `debug-stack` and `debug-evaluate` look around; `debug-sessions`
//! lists them; `debug-stop` ends one.
//!
//! This file owns the contract (schemas, arguments, result shapes). Each session is a thread in
//! `cdp/session.rs`; the registry is `sessions.rs`. Every call that waits has a deadline and
//! returns a state (`paused`, `running` or `exited`) rather than hanging.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crossbeam_channel::{select, Sender};
use serde_json::{json, Value};

use crate::cdp::node;
use crate::cdp::session;
use crate::debugger::model::{Action, BreakpointSpec, VariablesQuery};
use crate::debugger::session::{AttachSpec, Command, LaunchSpec, Reply};
use crate::debugger::{Code, Failure};
use crate::jsonrpc::Json;
use crate::sessions::{Handle, Watch};
use crate::shell;
use crate::tools::script::{self, check_file, render_failure, DEFAULT_TIMEOUT_MS, MAX_TIMEOUT_MS};
use crate::tools::{ArgError, Args, Call, ToolResult};

pub(crate) const NAMES: [&str; 18] = [
    "debug-launch",
    "debug-attach",
    "debug-set-breakpoint",
    "debug-remove-breakpoint",
    "debug-list-breakpoints",
    "debug-continue",
    "debug-step",
    "debug-pause",
    "debug-stack",
    "debug-variables",
    "debug-evaluate",
    "debug-set-variable",
    "debug-pause-on-exceptions",
    "debug-output",
    "debug-scripts",
    "debug-source",
    "debug-sessions",
    "debug-stop",
];

/// A call waits at most this much longer than its own timeout for the session to answer.
const MARGIN: Duration = Duration::from_secs(15);

fn session_id() -> Value {
    json!({"type": "string", "description": "The session (from debug-launch); may be omitted when exactly one is open."})
}

fn timeout() -> Value {
    json!({"type": "integer", "minimum": 1, "maximum": MAX_TIMEOUT_MS, "default": DEFAULT_TIMEOUT_MS,
           "description": "Milliseconds to wait for the program to stop; then the state is `running` (not an error)."})
}

/// Stop states and other answers vary in shape; every one is an object.
fn any_object() -> Value {
    json!({"type": "object", "properties": {
        "sessionId": {"type": "string"},
        "state": {"type": "string", "enum": ["paused", "running", "exited"]},
        "error": {"type": "string"}, "code": {"type": "string"}}})
}

fn breakpoint_schema() -> Value {
    json!({"type": "object", "properties": {
        "file": {"type": "string", "description": "Absolute or relative to the server's working directory; an original source (.ts) works through source maps."},
        "line": {"type": "integer", "minimum": 1},
        "column": {"type": "integer", "minimum": 1},
        "condition": {"type": "string", "description": "An expression in the program's language; stop only when truthy."},
        "logMessage": {"type": "string", "description": "A logpoint: log this (with {expression} parts) to debug-output instead of stopping."}},
        "required": ["file", "line"], "additionalProperties": false})
}

fn declare(
    name: &str,
    title: &str,
    description: &str,
    properties: Value,
    required: &[&str],
    read_only: bool,
) -> Value {
    json!({
        "name": name,
        "title": title,
        "description": description,
        "inputSchema": {"type": "object", "properties": properties, "required": required, "additionalProperties": false},
        "outputSchema": any_object(),
        "annotations": {"title": title, "readOnlyHint": read_only, "destructiveHint": false,
                        "idempotentHint": read_only, "openWorldHint": false}
    })
}

pub(crate) fn declarations() -> Vec<Value> {
    vec![
        declare(
            "debug-launch",
            "Launch a program under the debugger",
            "Starts a Node.js or Python command under the debugger, sets `breakpoints` (original source \
             files and lines work through source maps), and returns the first stop: where it \
             stopped, the source around it and the local variables. Returns `sessionId` for the \
             other debug-* tools. If nothing stops it within `timeout`, the state is `running`.",
            json!({
                "command": {"type": "string", "description": "e.g. `node app.js` or `python3 app.py`; no inspector flag needed."},
                "breakpoints": {"type": "array", "items": breakpoint_schema()},
                "stopOnEntry": {"type": "boolean", "default": false},
                "pauseOnExceptions": {"type": "string", "enum": ["none", "uncaught", "all"], "default": "none"},
                "language": script::language_schema(),
                "timeout": timeout()
            }),
            &["command"],
            false,
        ),
        declare(
            "debug-attach",
            "Attach to a running Node or Python process",
            "Attaches to a program that is already running. Node: by inspector WebSocket `url`, \
             by inspector `port` (started with --inspect), or by `pid` (its inspector is opened \
             with SIGUSR1, on port 9229). Python: by the `port` of `python -m debugpy --listen \
             PORT app.py`. What listens on `port` is found out unless `language` says. Only this \
             machine unless the host is in DEBUG_MCP_ALLOWED_HOSTS. `breakpoints` are set \
             before the program goes on (one started with --inspect-brk or debugpy's \
             --wait-for-client waits for that), and the answer is the first stop, as for \
             debug-launch. \
             debug-stop detaches; the process is never killed.",
            json!({"url": {"type": "string", "description": "ws://127.0.0.1:9229/<id>"},
                   "port": {"type": "integer", "minimum": 1, "maximum": 65535},
                   "pid": {"type": "integer", "minimum": 1},
                   "host": {"type": "string", "default": "127.0.0.1"},
                   "language": {"type": "string", "enum": ["node", "python"],
                                "description": "Which debugger listens on `port` (Node's inspector or debugpy); by default debug-mcp asks it."},
                   "breakpoints": {"type": "array", "items": breakpoint_schema()},
                   "pauseOnExceptions": {"type": "string", "enum": ["none", "uncaught", "all"], "default": "none"},
                   "timeout": {"type": "integer", "minimum": 1, "maximum": MAX_TIMEOUT_MS,
                               "description": "Milliseconds the answer waits for a stop; by default 30000 with `breakpoints`, else it answers at once."}}),
            &[],
            false,
        ),
        declare(
            "debug-set-breakpoint",
            "Set a breakpoint",
            "Sets a breakpoint (or, with `logMessage`, a logpoint) in a running or paused \
             session. A breakpoint in a script not loaded yet binds when it loads; `verified` \
             and `resolved` say whether and where it is bound.",
            {
                let mut properties = breakpoint_schema()["properties"].clone();
                properties["sessionId"] = session_id();
                properties
            },
            &["file", "line"],
            false,
        ),
        declare(
            "debug-remove-breakpoint",
            "Remove a breakpoint",
            "Removes a breakpoint by the `breakpointId` debug-set-breakpoint or debug-list-breakpoints gave.",
            json!({"sessionId": session_id(), "breakpointId": {"type": "string"}}),
            &["breakpointId"],
            false,
        ),
        declare(
            "debug-list-breakpoints",
            "List breakpoints",
            "Every breakpoint of the session: requested and resolved locations, condition, \
             logMessage, hit count, and why one has not bound.",
            json!({"sessionId": session_id()}),
            &[],
            true,
        ),
        declare(
            "debug-continue",
            "Continue to the next stop",
            "Resumes the program and returns the next stop (breakpoint, exception, `debugger;`), \
             or `exited` with the exit code, or `running` if `timeout` passes first.",
            json!({"sessionId": session_id(), "timeout": timeout()}),
            &[],
            false,
        ),
        declare(
            "debug-step",
            "Step over, into or out",
            "Steps the paused program (`over` the current line, `into` a call, `out` of the \
             function) and returns where it stopped.",
            json!({"sessionId": session_id(),
                   "kind": {"type": "string", "enum": ["over", "into", "out"]},
                   "timeout": timeout()}),
            &["kind"],
            false,
        ),
        declare(
            "debug-pause",
            "Pause the running program",
            "Stops a running program wherever it is and returns the stop state.",
            json!({"sessionId": session_id(), "timeout": timeout()}),
            &[],
            false,
        ),
        declare(
            "debug-stack",
            "Call stack",
            "The paused program's call stack, top first, in original source coordinates.",
            json!({"sessionId": session_id(),
                   "maxFrames": {"type": "integer", "minimum": 1, "maximum": 200, "default": 20},
                   "includeAsync": {"type": "boolean", "default": true, "description": "Also the awaiting callers (frames marked `async`)."}}),
            &[],
            true,
        ),
        declare(
            "debug-variables",
            "Variables of a paused frame",
            "Lists the variables of a scope of a paused frame as {name, type, value, \
             expandable}, compact and capped; `path` (e.g. `order.items[2]`) lists the members \
             of that value instead, to open what was cut.",
            json!({"sessionId": session_id(),
                   "frame": {"type": "integer", "minimum": 0, "default": 0},
                   "scope": {"type": "string", "enum": ["local", "closure", "module", "global", "all"], "default": "local"},
                   "path": {"type": "string"},
                   "maxItems": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 50}}),
            &[],
            true,
        ),
        declare(
            "debug-evaluate",
            "Evaluate an expression",
            "Evaluates an expression in the program's language in a paused frame (locals and \
             closures visible; \
             `frame` 0 is the top) or, while running, in the global scope. Returns {type, value} \
             as debug-script does; a thrown error gives type `error`.",
            json!({"sessionId": session_id(),
                   "expression": {"type": "string"},
                   "frame": {"type": "integer", "minimum": 0, "default": 0}}),
            &["expression"],
            false,
        ),
        declare(
            "debug-set-variable",
            "Change a variable",
            "Sets a variable of a paused frame to the value of an expression in the program's \
             language and returns its new {type, value}.",
            json!({"sessionId": session_id(),
                   "name": {"type": "string"},
                   "value": {"type": "string", "description": "An expression in the program's language, e.g. `42`, `{a: 1}` or `{'a': 1}`."},
                   "frame": {"type": "integer", "minimum": 0, "default": 0},
                   "scope": {"type": "string", "enum": ["local", "closure", "module", "global"], "default": "local"}}),
            &["name", "value"],
            false,
        ),
        declare(
            "debug-pause-on-exceptions",
            "Pause on exceptions",
            "Chooses which exceptions stop the program: `none`, `uncaught`, or `all` (caught too).",
            json!({"sessionId": session_id(),
                   "state": {"type": "string", "enum": ["none", "uncaught", "all"]}}),
            &["state"],
            false,
        ),
        declare(
            "debug-output",
            "Program output",
            "The program's stdout and stderr, console messages and logpoint messages since \
             `since` (the `cursor` of the previous answer; omit it for everything kept).",
            json!({"sessionId": session_id(), "since": {"type": "string"}}),
            &[],
            true,
        ),
        declare(
            "debug-scripts",
            "Loaded scripts",
            "The scripts the program has loaded, with their source maps and the original \
             sources those list (Node's own `node:` scripts only with includeInternal).",
            json!({"sessionId": session_id(), "includeInternal": {"type": "boolean", "default": false}}),
            &[],
            true,
        ),
        declare(
            "debug-source",
            "Show source lines",
            "Lines of a file with their numbers: `context` lines around `line`, or the start of \
             the file. Works for files on disk (original sources included) and for scripts the \
             program compiled in memory.",
            json!({"sessionId": session_id(), "file": {"type": "string"},
                   "line": {"type": "integer", "minimum": 1},
                   "context": {"type": "integer", "minimum": 0, "maximum": 200, "default": 5}}),
            &["file"],
            true,
        ),
        declare(
            "debug-sessions",
            "List debug sessions",
            "Every open session with its state.",
            json!({}),
            &[],
            true,
        ),
        declare(
            "debug-stop",
            "End a debug session",
            "Ends the session: kills a program it launched (with its process group and anything \
             it started), detaches from one it attached to (which runs on), and forgets the \
             session.",
            json!({"sessionId": session_id()}),
            &[],
            false,
        ),
    ]
}

pub(crate) fn handle(name: &str, arguments: &Value, call: &Call) -> Option<ToolResult> {
    let result = match name {
        "debug-launch" => handle_launch(arguments, call),
        "debug-attach" => handle_attach(arguments, call),
        "debug-set-breakpoint" => handle_set_breakpoint(arguments, call),
        "debug-remove-breakpoint" => handle_remove_breakpoint(arguments, call),
        "debug-list-breakpoints" => {
            handle_simple(arguments, call, |reply| Command::ListBreakpoints { reply })
        }
        "debug-output" => handle_output(arguments, call),
        "debug-scripts" => handle_scripts(arguments, call),
        "debug-source" => handle_source(arguments, call),
        "debug-continue" => handle_resume(arguments, call, Some(Action::Continue)),
        "debug-step" => handle_resume(arguments, call, None),
        "debug-pause" => handle_resume(arguments, call, Some(Action::Pause)),
        "debug-stack" => handle_stack(arguments, call),
        "debug-evaluate" => handle_evaluate(arguments, call),
        "debug-variables" => handle_variables(arguments, call),
        "debug-set-variable" => handle_set_variable(arguments, call),
        "debug-pause-on-exceptions" => handle_pause_on_exceptions(arguments, call),
        "debug-sessions" => Args::new(arguments)
            .and_then(|args| args.deny_unknown(&[]))
            .map(|()| json!({"sessions": call.sessions.list()}))
            .map_err(arg_failure),
        "debug-stop" => handle_stop(arguments, call),
        _ => Err(Failure::new(Code::Internal, format!("no handler for {name}"))),
    };
    match result {
        Ok(value) => Some(ToolResult::ok(Json::from(&value), Vec::new())),
        Err(failure) => render_failure(failure),
    }
}

fn arg_failure(e: ArgError) -> Failure {
    Failure::new(Code::InvalidArguments, format!("invalid argument `{}`: {}", e.field, e.problem))
        .with("field", e.field.into())
}

fn timeout_arg(args: &Args) -> Result<Duration, Failure> {
    let ms = args
        .integer("timeout", 1, MAX_TIMEOUT_MS, Some(DEFAULT_TIMEOUT_MS))
        .map_err(arg_failure)?;
    Ok(Duration::from_millis(ms))
}

fn breakpoints_arg(args: &Args) -> Result<Vec<BreakpointSpec>, Failure> {
    let breakpoints = args.objects("breakpoints").map_err(arg_failure)?;
    breakpoints.iter().map(|bp| breakpoint_spec(bp, &[])).collect()
}

fn pause_on_exceptions_arg(args: &Args) -> Result<String, Failure> {
    let state = args
        .choice("pauseOnExceptions", &["none", "uncaught", "all"], Some("none"))
        .map_err(arg_failure)?;
    Ok(state.to_string())
}

fn handle_launch(arguments: &Value, call: &Call) -> Reply {
    let args = Args::new(arguments).map_err(arg_failure)?;
    args.deny_unknown(&[
        "command",
        "breakpoints",
        "stopOnEntry",
        "pauseOnExceptions",
        "timeout",
        "language",
    ])
    .map_err(arg_failure)?;
    let command = shell::split(args.string("command").map_err(arg_failure)?)
        .map_err(|problem| arg_failure(ArgError { field: "command".into(), problem }))?;
    let breakpoints = breakpoints_arg(&args)?;
    let files: Vec<String> = breakpoints.iter().map(|b| b.file.display().to_string()).collect();
    let files: Vec<&str> = files.iter().map(String::as_str).collect();
    let python = script::language_arg(&args, &command, &files).map_err(arg_failure)?
        == crate::debugger::script::Language::Python;
    let spec = LaunchSpec {
        command,
        breakpoints,
        stop_on_entry: args.boolean("stopOnEntry", false).map_err(arg_failure)?,
        pause_on_exceptions: pause_on_exceptions_arg(&args)?,
        timeout: timeout_arg(&args)?,
    };
    let (_, state) = open_session(call, |id, watch| match python {
        true => crate::dap::session::launch(id, spec, watch, &call.cancel),
        false => session::launch(id, spec, watch, &call.cancel),
    })?;
    Ok(state)
}

/// Opens a session: reserves its id, starts it with `start` and registers it. Gives the id
/// and the first state.
fn open_session(
    call: &Call,
    start: impl FnOnce(&str, Arc<Watch>) -> Result<(Handle, Value), Failure>,
) -> Result<(String, Value), Failure> {
    let id = call.sessions.next_id().map_err(|m| Failure::new(Code::TooManySessions, m))?;
    let (handle, state) = start(&id, call.sessions.watch())?;
    call.sessions.insert(id.clone(), handle);
    Ok((id, state))
}

/// Whether `host` may be attached to: this machine, or listed in DEBUG_MCP_ALLOWED_HOSTS
/// (comma-separated).
fn host_allowed(host: &str) -> bool {
    node::is_loopback(host)
        || std::env::var("DEBUG_MCP_ALLOWED_HOSTS")
            .is_ok_and(|list| list.split(',').any(|h| h.trim() == host))
}

fn refuse_host(host: &str) -> Failure {
    Failure::new(
        Code::HostNotAllowed,
        format!(
            "{host} is not this machine: a debugger port (an inspector or debugpy) lets whoever connects run code there. \
             Add it to DEBUG_MCP_ALLOWED_HOSTS (comma-separated) in the server's environment to allow it"
        ),
    )
}

/// How long attaching by pid waits for the inspector SIGUSR1 opens.
const OPEN_INSPECTOR_WAIT: Duration = Duration::from_secs(5);

fn handle_attach(arguments: &Value, call: &Call) -> Reply {
    let args = Args::new(arguments).map_err(arg_failure)?;
    args.deny_unknown(&[
        "url",
        "port",
        "pid",
        "host",
        "language",
        "breakpoints",
        "pauseOnExceptions",
        "timeout",
    ])
    .map_err(arg_failure)?;
    let language = script::language_given(&args).map_err(arg_failure)?;
    let breakpoints = breakpoints_arg(&args)?;
    // With breakpoints, the first answer waits for a stop, as debug-launch's does.
    let timeout = if arguments.get("timeout").is_some() || !breakpoints.is_empty() {
        timeout_arg(&args)?
    } else {
        Duration::ZERO
    };
    let start =
        AttachSpec { breakpoints, pause_on_exceptions: pause_on_exceptions_arg(&args)?, timeout };
    let url = args.optional_string("url").map_err(arg_failure)?;
    let port = args.integer("port", 1, 65535, Some(0)).map_err(arg_failure)?;
    let pid = args.integer("pid", 1, u64::from(u32::MAX), Some(0)).map_err(arg_failure)?;
    let host = args.optional_string("host").map_err(arg_failure)?.unwrap_or("127.0.0.1");
    let given = [url.is_some(), port != 0, pid != 0].iter().filter(|g| **g).count();
    if given != 1 {
        return Err(arg_failure(ArgError {
            field: "url".into(),
            problem: "give exactly one of `url`, `port` or `pid`".into(),
        }));
    }
    if language == Some(crate::debugger::script::Language::Python) && port == 0 {
        return Err(arg_failure(ArgError {
            field: "port".into(),
            problem: "a Python program is attached to by the port debugpy listens on: start it \
                      with `python -m debugpy --listen 127.0.0.1:5678 app.py` and pass `port`"
                .into(),
        }));
    }
    if port != 0 {
        if !host_allowed(host) {
            return Err(refuse_host(host));
        }
        if language != Some(crate::debugger::script::Language::Node) {
            let address = node::socket_address(host, port as u16)
                .map_err(|m| Failure::new(Code::NoInspector, m))?;
            match crate::dap::session::connect(address, &call.cancel)? {
                Some(client) => {
                    let (_, mut state) = open_session(call, |id, watch| {
                        crate::dap::session::attach(id, client, address, start, watch, &call.cancel)
                    })?;
                    state["attached"] = json!({"url": format!("tcp://{address}")});
                    return Ok(state);
                }
                None if language.is_some() => {
                    return Err(Failure::new(
                        Code::NoInspector,
                        format!(
                            "debugpy does not answer on {address}: start the program with \
                             `python -m debugpy --listen {port} app.py`"
                        ),
                    ))
                }
                None => {} // Node's inspector, perhaps: asked below.
            }
        }
    }
    let ws_url = if let Some(url) = url {
        let authority =
            url.strip_prefix("ws://").and_then(|r| r.split('/').next()).ok_or_else(|| {
                arg_failure(ArgError {
                    field: "url".into(),
                    problem: "expected ws://HOST:PORT/ID".into(),
                })
            })?;
        let url_host = authority.rsplit_once(':').map_or(authority, |(h, _)| h);
        if !host_allowed(url_host) {
            return Err(refuse_host(url_host));
        }
        url.to_string()
    } else if port != 0 {
        node::websocket_url(host, port as u16, Duration::from_secs(5))
            .map_err(|m| Failure::new(Code::NoInspector, m))?
    } else {
        let pid = u32::try_from(pid).expect("bounded by the range check");
        crate::sys::open_inspector(pid).map_err(|e| {
            Failure::new(
                Code::NoProcess,
                format!("cannot signal process {pid}: {e} (is it running, and yours?)"),
            )
        })?;
        let deadline = std::time::Instant::now() + OPEN_INSPECTOR_WAIT;
        loop {
            match node::websocket_url("127.0.0.1", 9229, Duration::from_millis(500)) {
                Ok(url) => break url,
                Err(_) if std::time::Instant::now() < deadline => {
                    select! {
                        recv(call.cancel) -> _ => return Err(Failure::Cancelled),
                        default(Duration::from_millis(50)) => {}
                    }
                }
                Err(m) => {
                    return Err(Failure::new(
                        Code::NoInspector,
                        format!("process {pid} did not open its inspector on 127.0.0.1:9229 after SIGUSR1 ({m}); is it a Node process?"),
                    ))
                }
            }
        }
    };
    let (id, mut state) = open_session(call, |id, watch| {
        session::attach(id, ws_url.clone(), start, watch, &call.cancel)
    })?;
    if pid != 0 {
        // Port 9229 might belong to another process: make sure it is the one asked for.
        let seen = ask(call, Some(&id), Duration::ZERO, |reply| Command::Evaluate {
            expression: "process.pid".into(),
            frame: 0,
            reply,
        })?;
        if seen["value"] != pid {
            drop(call.sessions.remove(&id));
            return Err(Failure::new(
                Code::WrongProcess,
                format!(
                    "the inspector on 127.0.0.1:9229 belongs to process {}, not {pid}",
                    seen["value"]
                ),
            ));
        }
    }
    state["attached"] = json!({"url": ws_url});
    Ok(state)
}

/// Sends a command to a session and waits for its reply, or the cancel signal.
fn ask(
    call: &Call,
    id: Option<&str>,
    limit: Duration,
    make: impl FnOnce(Sender<Reply>) -> Command,
) -> Reply {
    let (id, commands) = call.sessions.find(id).map_err(|m| Failure::new(Code::NoSession, m))?;
    let (reply_tx, reply) = crossbeam_channel::bounded(1);
    commands
        .send(make(reply_tx))
        .map_err(|_| Failure::new(Code::NoSession, format!("session {id} has ended")))?;
    select! {
        recv(reply) -> answer => answer.unwrap_or_else(|_| Err(Failure::new(Code::NoSession, format!("session {id} ended while answering")))),
        recv(call.cancel) -> _ => Err(Failure::Cancelled),
        recv(crossbeam_channel::after(limit + MARGIN)) -> _ => Err(Failure::new(Code::Internal, format!("session {id} did not answer"))),
    }
}

fn handle_resume(arguments: &Value, call: &Call, action: Option<Action>) -> Reply {
    let args = Args::new(arguments).map_err(arg_failure)?;
    let known: &[&str] = if action.is_none() {
        &["sessionId", "kind", "timeout"]
    } else {
        &["sessionId", "timeout"]
    };
    args.deny_unknown(known).map_err(arg_failure)?;
    let action = match action {
        Some(action) => action,
        None => match args.choice("kind", &["over", "into", "out"], None).map_err(arg_failure)? {
            "over" => Action::StepOver,
            "into" => Action::StepInto,
            _ => Action::StepOut,
        },
    };
    let timeout = timeout_arg(&args)?;
    let id = args.optional_string("sessionId").map_err(arg_failure)?;
    ask(call, id, timeout, |reply| Command::Resume { action, timeout, reply })
}

fn handle_stack(arguments: &Value, call: &Call) -> Reply {
    let args = Args::new(arguments).map_err(arg_failure)?;
    args.deny_unknown(&["sessionId", "maxFrames", "includeAsync"]).map_err(arg_failure)?;
    let max_frames = args.integer("maxFrames", 1, 200, Some(20)).map_err(arg_failure)? as usize;
    let include_async = args.boolean("includeAsync", true).map_err(arg_failure)?;
    let id = args.optional_string("sessionId").map_err(arg_failure)?;
    ask(call, id, Duration::ZERO, |reply| Command::Stack { max_frames, include_async, reply })
}

fn handle_evaluate(arguments: &Value, call: &Call) -> Reply {
    let args = Args::new(arguments).map_err(arg_failure)?;
    args.deny_unknown(&["sessionId", "expression", "frame"]).map_err(arg_failure)?;
    let expression = args.string("expression").map_err(arg_failure)?.to_string();
    let frame = args.integer("frame", 0, 10_000, Some(0)).map_err(arg_failure)? as usize;
    let id = args.optional_string("sessionId").map_err(arg_failure)?;
    ask(call, id, Duration::ZERO, |reply| Command::Evaluate { expression, frame, reply })
}

fn handle_variables(arguments: &Value, call: &Call) -> Reply {
    let args = Args::new(arguments).map_err(arg_failure)?;
    args.deny_unknown(&["sessionId", "frame", "scope", "path", "maxItems"]).map_err(arg_failure)?;
    let query = VariablesQuery {
        frame: args.integer("frame", 0, 10_000, Some(0)).map_err(arg_failure)? as usize,
        scope: args
            .choice("scope", &["local", "closure", "module", "global", "all"], Some("local"))
            .map_err(arg_failure)?
            .to_string(),
        path: args
            .optional_string("path")
            .map_err(arg_failure)?
            .filter(|p| !p.trim().is_empty())
            .map(String::from),
        max_items: args.integer("maxItems", 1, 1000, Some(50)).map_err(arg_failure)? as usize,
    };
    let id = args.optional_string("sessionId").map_err(arg_failure)?;
    ask(call, id, Duration::ZERO, |reply| Command::Variables { query, reply })
}

fn handle_set_variable(arguments: &Value, call: &Call) -> Reply {
    let args = Args::new(arguments).map_err(arg_failure)?;
    args.deny_unknown(&["sessionId", "name", "value", "frame", "scope"]).map_err(arg_failure)?;
    let name = args.string("name").map_err(arg_failure)?.to_string();
    let value = args.string("value").map_err(arg_failure)?.to_string();
    let frame = args.integer("frame", 0, 10_000, Some(0)).map_err(arg_failure)? as usize;
    let scope = args
        .choice("scope", &["local", "closure", "module", "global"], Some("local"))
        .map_err(arg_failure)?
        .to_string();
    let id = args.optional_string("sessionId").map_err(arg_failure)?;
    ask(call, id, Duration::ZERO, |reply| Command::SetVariable { name, value, frame, scope, reply })
}

fn handle_pause_on_exceptions(arguments: &Value, call: &Call) -> Reply {
    let args = Args::new(arguments).map_err(arg_failure)?;
    args.deny_unknown(&["sessionId", "state"]).map_err(arg_failure)?;
    let state =
        args.choice("state", &["none", "uncaught", "all"], None).map_err(arg_failure)?.to_string();
    let id = args.optional_string("sessionId").map_err(arg_failure)?;
    ask(call, id, Duration::ZERO, |reply| Command::PauseOnExceptions { state, reply })
}

/// A breakpoint's fields, checked (the file exists, the line is in it).
/// One breakpoint's fields; `debug-set-breakpoint`'s arguments also carry `sessionId` (in
/// `also`), an entry of `breakpoints` does not.
fn breakpoint_spec(bp: &Args, also: &[&str]) -> Result<BreakpointSpec, Failure> {
    let mut fields = vec!["file", "line", "column", "condition", "logMessage"];
    fields.extend_from_slice(also);
    bp.deny_unknown(&fields).map_err(arg_failure)?;
    let file = bp.string("file").map_err(arg_failure)?;
    let line = bp.integer("line", 1, u64::from(u32::MAX), None).map_err(arg_failure)?;
    let line = u32::try_from(line).expect("bounded by the range check");
    let column = match bp.integer("column", 1, u64::from(u32::MAX), Some(0)).map_err(arg_failure)? {
        0 => None,
        column => Some(u32::try_from(column).expect("bounded by the range check")),
    };
    let text = |name| -> Result<Option<String>, Failure> {
        Ok(bp
            .optional_string(name)
            .map_err(arg_failure)?
            .filter(|c| !c.trim().is_empty())
            .map(String::from))
    };
    let (file, real_file) = check_file(Path::new(file), line)?;
    Ok(BreakpointSpec {
        file,
        real_file,
        line,
        column,
        condition: text("condition")?,
        log_message: text("logMessage")?,
    })
}

fn handle_set_breakpoint(arguments: &Value, call: &Call) -> Reply {
    let args = Args::new(arguments).map_err(arg_failure)?;
    let spec = breakpoint_spec(&args, &["sessionId"])?;
    let id = args.optional_string("sessionId").map_err(arg_failure)?;
    ask(call, id, Duration::ZERO, |reply| Command::SetBreakpoint { spec, reply })
}

fn handle_remove_breakpoint(arguments: &Value, call: &Call) -> Reply {
    let args = Args::new(arguments).map_err(arg_failure)?;
    args.deny_unknown(&["sessionId", "breakpointId"]).map_err(arg_failure)?;
    let breakpoint = args.string("breakpointId").map_err(arg_failure)?.to_string();
    let id = args.optional_string("sessionId").map_err(arg_failure)?;
    ask(call, id, Duration::ZERO, |reply| Command::RemoveBreakpoint { id: breakpoint, reply })
}

fn handle_output(arguments: &Value, call: &Call) -> Reply {
    let args = Args::new(arguments).map_err(arg_failure)?;
    args.deny_unknown(&["sessionId", "since"]).map_err(arg_failure)?;
    let since = args.optional_string("since").map_err(arg_failure)?.map(String::from);
    let id = args.optional_string("sessionId").map_err(arg_failure)?;
    ask(call, id, Duration::ZERO, |reply| Command::Output { since, reply })
}

fn handle_scripts(arguments: &Value, call: &Call) -> Reply {
    let args = Args::new(arguments).map_err(arg_failure)?;
    args.deny_unknown(&["sessionId", "includeInternal"]).map_err(arg_failure)?;
    let include_internal = args.boolean("includeInternal", false).map_err(arg_failure)?;
    let id = args.optional_string("sessionId").map_err(arg_failure)?;
    ask(call, id, Duration::ZERO, |reply| Command::Scripts { include_internal, reply })
}

/// Lines of shown at most without a `line`.
const SOURCE_HEAD: usize = 200;

fn handle_source(arguments: &Value, call: &Call) -> Reply {
    let args = Args::new(arguments).map_err(arg_failure)?;
    args.deny_unknown(&["sessionId", "file", "line", "context"]).map_err(arg_failure)?;
    let file = args.string("file").map_err(arg_failure)?;
    let line = args.integer("line", 1, u64::from(u32::MAX), Some(0)).map_err(arg_failure)? as usize;
    let context = args.integer("context", 0, 200, Some(5)).map_err(arg_failure)? as usize;
    let mut path =
        std::path::absolute(Path::new(file)).unwrap_or_else(|_| Path::new(file).to_path_buf());
    let mut line = line;
    let mut mapped_from = None;
    // A generated file with a source map: show the original source around the mapped line.
    if line > 0 && crate::cdp::maps::is_javascript(&path) {
        if let Ok(Some(map)) = crate::cdp::maps::map_of(&path) {
            let at = |column| crate::sourcemap::Position { line: line as u32 - 1, column };
            let original = map.original_for(at(u32::MAX)).or_else(|| map.original_for(at(0)));
            if let Some((source, position)) = original {
                let known = |p: &std::path::PathBuf| {
                    p.exists() || crate::cdp::maps::original_text(p).is_some()
                };
                if let Some(source_path) = map.sources()[source].path.clone().filter(known) {
                    mapped_from = Some(json!({"file": path.display().to_string(), "line": line}));
                    path = source_path;
                    line = position.line as usize + 1;
                }
            }
        }
    }
    let on_disk = std::fs::read_to_string(&path).ok();
    let text = match on_disk.or_else(|| Some(crate::cdp::maps::original_text(&path)?.to_string())) {
        Some(text) => text,
        None => {
            // Not on disk: maybe code the program compiled in memory.
            let id = args.optional_string("sessionId").map_err(arg_failure)?;
            let file = path.display().to_string();
            let answer =
                ask(call, id, Duration::ZERO, |reply| Command::ScriptSource { file, reply })?;
            answer["text"].as_str().unwrap_or_default().to_string()
        }
    };
    let total = text.lines().count();
    if line > total {
        return Err(Failure::new(
            Code::LineOutOfRange,
            format!("line {line} is past the end of {} ({total} lines)", path.display()),
        ));
    }
    let (start, count) = match line {
        0 => (0, SOURCE_HEAD),
        line => (line.saturating_sub(context + 1), context * 2 + 1),
    };
    let lines: Vec<Value> = text
        .lines()
        .enumerate()
        .skip(start)
        .take(count)
        .map(|(i, t)| {
            let mut entry = json!({"line": i + 1, "text": t});
            if i + 1 == line {
                entry["current"] = true.into();
            }
            entry
        })
        .collect();
    let mut answer =
        json!({"file": path.display().to_string(), "lines": lines, "totalLines": total});
    if let Some(from) = mapped_from {
        answer["mappedFrom"] = from;
    }
    Ok(answer)
}

/// A tool whose only argument is `sessionId`.
fn handle_simple(
    arguments: &Value,
    call: &Call,
    make: impl FnOnce(Sender<Reply>) -> Command,
) -> Reply {
    let args = Args::new(arguments).map_err(arg_failure)?;
    args.deny_unknown(&["sessionId"]).map_err(arg_failure)?;
    let id = args.optional_string("sessionId").map_err(arg_failure)?;
    ask(call, id, Duration::ZERO, make)
}

fn handle_stop(arguments: &Value, call: &Call) -> Reply {
    let args = Args::new(arguments).map_err(arg_failure)?;
    args.deny_unknown(&["sessionId"]).map_err(arg_failure)?;
    let id = args.optional_string("sessionId").map_err(arg_failure)?;
    let (id, _) = call.sessions.find(id).map_err(|m| Failure::new(Code::NoSession, m))?;
    let last = call.sessions.list().into_iter().find(|s| s["sessionId"] == id.as_str());
    // Dropping the handle ends the session: its program is killed and its thread joined.
    drop(call.sessions.remove(&id));
    Ok(
        json!({"sessionId": id, "stopped": true, "lastState": last.map_or(Value::Null, |s| s["state"].clone())}),
    )
}
