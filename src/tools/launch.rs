//! Starting and ending sessions: `debug-launch` (which attaches too), `debug-restart`,
//! `debug-sessions`, `debug-stop`. Each session is a thread running the session actor (`debugger/session.rs`)
//! over a runtime's backend; the registry is `sessions.rs`.

use std::path::PathBuf;
use std::time::Duration;

use crossbeam_channel::select;
use serde_json::{json, Value};

use crate::cdp::urls::Files;
use crate::debugger::model::{AttachSpec, LaunchSpec};
use crate::debugger::script::Language;
use crate::debugger::session::Command;
use crate::debugger::{Code, Failure};
use crate::deno::Deno;
use crate::jsonrpc::Json;
use crate::native::Native;
use crate::node::Node;
use crate::python::Python;
use crate::tools::breakpoints::{
    breakpoint_properties, breakpoint_spec, pause_on_exceptions_schema, EXCEPTION_STATES,
};
use crate::tools::page::{self, Page};
use crate::tools::script;
use crate::tools::{
    answer, any_object, ask, ask_session, command_arg, cwd_arg, extend, in_dir, open_session,
    run_properties, session_id, timeout, timeout_arg, ArgError, Args, Call, Tool, ToolResult,
};

pub(crate) const TOOLS: &[Tool] = &[
    Tool {
        name: "debug-launch",
        title: "Start a debug session",
        description: "Starts a session and answers its first stop with a `sessionId`, or state `running` if nothing stopped it within \
            `timeout`. Runs `command`, opens `url` (a web page), or reads `core` with \
            its `program`; attaches instead to `pid`, to `port` (node/deno --inspect, debugpy \
            --listen, a browser's debugging port; `target` picks its page) or to an inspector's \
            ws:// `url`, which it never kills.",
        properties: || {
            let properties = json!({
                "command": {"type": "string"},
                "breakpoints": breakpoints_schema(),
                "pauseOnExceptions": pause_on_exceptions_schema(),
                "stopOnEntry": {"type": "boolean"},
                "timeout": timeout(),
                "core": {"type": "string"},
                "program": {"type": "string"},
                "pid": {"type": "integer", "minimum": 1},
                "port": {"type": "integer", "minimum": 1, "maximum": 65535},
                "host": {"type": "string"},
                "target": {"type": "string"},
                "pathMappings": path_mappings_schema(),
                "language": script::language_schema(),
            });
            extend(extend(properties, run_properties(true)), page::properties(false))
        },
        required: &[],
        read_only: false,
        output: any_object,
        run: |args, call| match attaching(args)? {
            true => answer(attach(args, call)),
            false => answer(launch(args, call)),
        },
    },
    Tool {
        name: "debug-restart",
        title: "Restart the program",
        description: "Runs the session's program again (after an edit) with the same \
            breakpoints and watches; answers the first stop.",
        properties: || json!({"sessionId": session_id(), "timeout": timeout()}),
        required: &[],
        read_only: false,
        output: any_object,
        run: |args, call| {
            let timeout = timeout_arg(args)?;
            answer(ask(args, call, timeout, |reply| Command::Restart { timeout, reply }))
        },
    },
    Tool {
        name: "debug-sessions",
        title: "List debug sessions",
        description: "The open sessions: state, command, processes.",
        properties: || json!({}),
        required: &[],
        read_only: true,
        output: any_object,
        run: |_, call| answer(Ok(json!({"sessions": call.sessions.list()}))),
    },
    Tool {
        name: "debug-stop",
        title: "End a debug session",
        description: "Ends a session: kills what it launched, detaches from what it attached to.",
        properties: || json!({"sessionId": session_id()}),
        required: &[],
        read_only: false,
        output: any_object,
        run: stop,
    },
];

/// Former names, still answered: `debug-attach` is `debug-launch` with `pid`, `port` or a
/// ws:// `url`.
pub(crate) const FORMER: &[Tool] = &[Tool {
    name: "debug-attach",
    title: "Attach to a running process",
    description: "Former name of debug-launch with `pid`, `port` or a ws:// `url`.",
    properties: || {
        json!({"url": {"type": "string"}, "port": {"type": "integer"}, "pid": {"type": "integer"},
               "host": {"type": "string"}, "target": {"type": "string"},
               "webRoot": {"type": "string"}, "language": {"type": "string"},
               "breakpoints": breakpoints_schema(), "cwd": {"type": "string"},
               "pauseOnExceptions": pause_on_exceptions_schema(), "timeout": timeout()})
    },
    required: &[],
    read_only: false,
    output: any_object,
    run: |args, call| answer(attach(args, call)),
}];

/// Whether a `debug-launch` call attaches (`pid`, `port`, or an inspector's ws:// `url`)
/// rather than starting a program; the fields of the other way are refused.
fn attaching(args: &Args) -> Result<bool, ArgError> {
    let ws = args.optional_string("url")?.is_some_and(|url| url.starts_with("ws://"));
    let attaching = ws || args.has("pid") || args.has("port");
    let (refused, why) = match attaching {
        true => (
            &["command", "core", "stopOnEntry", "env", "stdin", "browser"][..],
            "a program attached to runs as it was started: leave out",
        ),
        false => (&["host", "target", "pathMappings"][..], "only to attach (with `port`):"),
    };
    match refused.iter().find(|field| args.has(field)) {
        Some(field) => Err(ArgError::new(field, format!("{why} `{field}`"))),
        None => Ok(attaching),
    }
}

/// Where an attached program's files are here: `[{"remote": "/app", "local": "."}]` (the
/// fields are checked by `path_mappings_arg`; the schema stays short, as clients send it to
/// the model with every turn).
fn path_mappings_schema() -> Value {
    json!({"type": "array", "items": {"type": "object"}})
}

fn breakpoints_schema() -> Value {
    json!({"type": "array", "items": {"type": "object", "properties": breakpoint_properties(),
           "required": ["file", "line"]}})
}

fn breakpoints_arg(
    args: &Args,
    cwd: Option<&std::path::Path>,
) -> Result<Vec<crate::debugger::model::BreakpointSpec>, Failure> {
    let breakpoints = args.objects("breakpoints")?;
    breakpoints.iter().map(|bp| breakpoint_spec(bp, cwd)).collect()
}

fn pause_on_exceptions_arg(args: &Args) -> Result<String, Failure> {
    let state = args.choice("pauseOnExceptions", EXCEPTION_STATES, Some("none"))?;
    Ok(state.to_string())
}

fn launch(args: &Args, call: &Call) -> Result<Value, Failure> {
    if args.has("core") || args.has("program") {
        return core(args, call);
    }
    if let Some(page) = page::page_arg(args, false)? {
        return launch_page(page, args, call);
    }
    let command = command_arg(args)?;
    let breakpoints = breakpoints_arg(args, command.cwd.as_deref())?;
    let files: Vec<String> = breakpoints.iter().map(|b| b.file.display().to_string()).collect();
    let files: Vec<&str> = files.iter().map(String::as_str).collect();
    let language = script::language_arg(args, &command, &files)?;
    let spec = LaunchSpec {
        command,
        breakpoints,
        stop_on_entry: args.boolean("stopOnEntry", false)?,
        pause_on_exceptions: pause_on_exceptions_arg(args)?,
        timeout: timeout_arg(args)?,
    };
    let native = match language {
        Language::Native => {
            Some(Native::resolve(&spec.command, args.optional_string("language")?, &files, false)?)
        }
        _ => None,
    };
    let python = python_debugger(args.optional_string("language")?);
    let (_, state) = open_session(call, |id, watch| match (language, native) {
        (Language::Native, Some(flavour)) => {
            crate::dap::session::launch(flavour, id, spec, watch, &call.cancel)
        }
        (Language::Deno, _) => {
            crate::cdp::session::launch(Box::new(Deno::default()), id, spec, watch, &call.cancel)
        }
        (Language::Python, _) => crate::dap::session::launch(python, id, spec, watch, &call.cancel),
        (Language::Java, _) => crate::jdwp::session::launch(id, spec, watch, &call.cancel),
        _ => crate::cdp::session::launch(Box::new(Node::default()), id, spec, watch, &call.cancel),
    })?;
    Ok(state)
}

/// The debugger of a Python session: debug-mcp's own, or debugpy when `language` says
/// `debugpy` (or `DEBUG_MCP_PYTHON_DEBUGGER=debugpy` in the server's environment).
fn python_debugger(language: Option<&str>) -> Python {
    let asked = std::env::var("DEBUG_MCP_PYTHON_DEBUGGER").ok();
    match language.or(asked.as_deref()) {
        Some("debugpy") => Python::DEBUGPY,
        _ => Python::OWN,
    }
}

/// A web page's session: the browser opens it once its breakpoints are set.
fn launch_page(page: Page, args: &Args, call: &Call) -> Result<Value, Failure> {
    let breakpoints = breakpoints_arg(args, page.command.cwd.as_deref())?;
    for breakpoint in &breakpoints {
        page::check_served(&page, &breakpoint.file)?;
    }
    if args.boolean("stopOnEntry", false)? {
        return Err(ArgError {
            field: "stopOnEntry".into(),
            problem: "a page has no first line to stop at: set a breakpoint in its script".into(),
        }
        .into());
    }
    let spec = LaunchSpec {
        command: page.command,
        breakpoints,
        stop_on_entry: false,
        pause_on_exceptions: pause_on_exceptions_arg(args)?,
        timeout: timeout_arg(args)?,
    };
    let (_, state) = open_session(call, |id, watch| {
        crate::cdp::session::launch(Box::new(page.browser), id, spec, watch, &call.cancel)
    })?;
    Ok(state)
}

/// A core file's session: lldb-dap reads it (`attach {program, coreFile}`) and stops where the
/// program crashed.
fn core(args: &Args, call: &Call) -> Result<Value, Failure> {
    let cwd = cwd_arg(args)?;
    let path = |field: &str| -> Result<PathBuf, Failure> {
        let given = args.string(field)?;
        let path = in_dir(given, cwd.as_deref());
        let path = path.canonicalize().unwrap_or(path);
        if !path.is_file() {
            return Err(Failure::new(
                Code::FileNotFound,
                format!("`{field}`: {} is not a file", path.display()),
            )
            .with("field", field.into()));
        }
        Ok(path)
    };
    let (core, program) = (path("core")?, path("program")?);
    if args.has("command") {
        return Err(ArgError {
            field: "command".into(),
            problem: "a core file's session runs nothing: give `core` and `program` only".into(),
        }
        .into());
    }
    let flavour = Native::for_core(&core, &program, args.optional_string("language")?)?;
    let command = crate::shell::CommandLine {
        words: vec![program.display().to_string()],
        cwd: cwd.clone(),
        ..crate::shell::CommandLine::default()
    };
    let spec = LaunchSpec {
        command,
        breakpoints: Vec::new(),
        stop_on_entry: false,
        pause_on_exceptions: "none".into(),
        timeout: timeout_arg(args)?,
    };
    let (_, state) = open_session(call, |id, watch| {
        crate::dap::session::launch(flavour, id, spec, watch, &call.cancel)
    })?;
    Ok(state)
}

/// Whether `host` may be attached to: this machine, or listed in DEBUG_MCP_ALLOWED_HOSTS
/// (comma-separated).
fn host_allowed(host: &str) -> bool {
    crate::net::is_loopback(host)
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

/// `pathMappings: [{remote, local}]`: where the files of a program attached to (in a
/// container, or run from a copy) are here; `local` resolves against `cwd`.
fn path_mappings_arg(
    args: &Args,
    cwd: Option<&std::path::Path>,
) -> Result<Vec<crate::debugger::model::PathMapping>, Failure> {
    let mut mappings = Vec::new();
    for mapping in args.objects("pathMappings")? {
        let local = in_dir(mapping.string("local")?, cwd);
        let local = local.canonicalize().unwrap_or(local);
        let remote = mapping.string("remote")?.trim_end_matches('/').to_string();
        mappings.push(crate::debugger::model::PathMapping { remote, local });
    }
    Ok(mappings)
}

/// Attaches to a Delve that listens (`dlv --headless --listen … --accept-multiclient exec
/// ./app`): a remote target, its paths mapped when `pathMappings` says where they are here.
fn attach_delve(host: &str, port: u16, start: AttachSpec, call: &Call) -> Result<Value, Failure> {
    let address =
        crate::net::socket_address(host, port).map_err(|m| Failure::new(Code::NoInspector, m))?;
    let flavour = Native::delve_remote();
    let Some(client) = crate::dap::session::connect(&flavour, address, &call.cancel)? else {
        return Err(Failure::new(
            Code::NoInspector,
            format!(
                "Delve does not answer on {address}: start the program with `dlv --headless \
                 --listen 127.0.0.1:{port} --accept-multiclient exec ./app`"
            ),
        ));
    };
    let (_, mut state) = open_session(call, |id, watch| {
        crate::dap::session::attach(flavour, id, client, address, start, watch, &call.cancel)
    })?;
    state["attached"] = json!({"url": format!("tcp://{address}")});
    Ok(state)
}

/// Attaches through lldb-dap to a gdb-remote server (`lldb-server gdbserver HOST:PORT ./app`,
/// `gdbserver :PORT ./app`) at `host:port`; `program` is the executable with its debug
/// information, read here.
fn attach_gdb_remote(
    host: &str,
    port: u16,
    program: &std::path::Path,
    language: &str,
    start: AttachSpec,
    call: &Call,
) -> Result<Value, Failure> {
    if !program.is_file() {
        return Err(Failure::new(
            Code::FileNotFound,
            format!(
                "`program`: {} is not a file (the executable the server runs, or a copy)",
                program.display()
            ),
        )
        .with("field", "program".into()));
    }
    let flavour = Native::lldb_remote(host, port, program, language, &start.path_mappings)?;
    let attached = json!({"url": format!("gdb-remote://{host}:{port}")});
    through_adapter(flavour, program, start, attached, call)
}

/// Refuses `pathMappings` where they cannot apply yet.
fn unmapped(start: &AttachSpec, what: &str) -> Result<(), Failure> {
    match start.path_mappings.is_empty() {
        true => Ok(()),
        false => Err(Failure::new(
            Code::Unsupported,
            format!(
                "`pathMappings` work when attaching to Node, Deno, debugpy, Delve or a gdb-remote server; {what} is debugged \
                 from the paths it runs from: leave them out"
            ),
        )
        .with("field", "pathMappings".into())),
    }
}

/// How long attaching by pid waits for the inspector SIGUSR1 opens.
const OPEN_INSPECTOR_WAIT: Duration = Duration::from_secs(5);

fn attach(args: &Args, call: &Call) -> Result<Value, Failure> {
    let language = script::language_given(args)?;
    let cwd = cwd_arg(args)?;
    let breakpoints = breakpoints_arg(args, cwd.as_deref())?;
    // With breakpoints, the first answer waits for a stop, as debug-launch's does.
    let timeout = if args.has("timeout") || !breakpoints.is_empty() {
        timeout_arg(args)?
    } else {
        Duration::ZERO
    };
    let path_mappings = path_mappings_arg(args, cwd.as_deref())?;
    let start = AttachSpec {
        breakpoints,
        cwd,
        pause_on_exceptions: pause_on_exceptions_arg(args)?,
        timeout,
        path_mappings,
    };
    let url = args.optional_string("url")?;
    let port = args.integer("port", 1, 65535, Some(0))?;
    let pid = args.integer("pid", 1, u64::from(u32::MAX), Some(0))?;
    let host = args.optional_string("host")?.unwrap_or("127.0.0.1");
    let given = [url.is_some(), port != 0, pid != 0].iter().filter(|g| **g).count();
    if given != 1 {
        return Err(ArgError {
            field: "url".into(),
            problem: "give exactly one of `url`, `port` or `pid`".into(),
        }
        .into());
    }
    if language == Some(Language::Java) && port == 0 {
        return Err(ArgError {
            field: "port".into(),
            problem: "a JVM is attached to by the port its debug agent listens on: start it \
                      with -agentlib:jdwp=transport=dt_socket,server=y,suspend=n,\
                      address=127.0.0.1:5005 and pass `port`"
                .into(),
        }
        .into());
    }
    if language == Some(Language::Python) && port == 0 {
        return Err(ArgError {
            field: "port".into(),
            problem: "a Python program is attached to by the port debugpy listens on: start it \
                      with `python -m debugpy --listen 127.0.0.1:5678 app.py` and pass `port`"
                .into(),
        }
        .into());
    }
    if port != 0 {
        if !host_allowed(host) {
            return Err(refuse_host(host));
        }
        match args.optional_string("language")? {
            Some("go") => return attach_delve(host, port as u16, start, call),
            Some("java") => {
                let address = crate::net::socket_address(host, port as u16)
                    .map_err(|m| Failure::new(Code::AttachFailed, m))?;
                let (_, mut state) = open_session(call, |id, watch| {
                    crate::jdwp::session::attach(id, address, start, watch, &call.cancel)
                })?;
                state["attached"] = json!({"url": format!("jdwp://{address}")});
                return Ok(state);
            }
            Some(language @ ("c" | "cpp" | "rust" | "zig" | "lldb")) => {
                let program = in_dir(args.string("program")?, start.cwd.as_deref());
                return attach_gdb_remote(host, port as u16, &program, language, start, call);
            }
            _ => {}
        }
    }
    if args.has("program") {
        return Err(ArgError::new(
            "program",
            "`program` goes with `core`, or with the `port` of a gdb-remote server and a native \
             `language` (c, cpp, rust, zig)",
        )
        .into());
    }
    if port != 0 && language != Some(Language::Node) {
        let address = crate::net::socket_address(host, port as u16)
            .map_err(|m| Failure::new(Code::NoInspector, m))?;
        match crate::dap::session::connect(&Python::DEBUGPY, address, &call.cancel)? {
            Some(client) => {
                let (_, mut state) = open_session(call, |id, watch| {
                    crate::dap::session::attach(
                        Python::DEBUGPY,
                        id,
                        client,
                        address,
                        start,
                        watch,
                        &call.cancel,
                    )
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
    if pid != 0 && language != Some(Language::Node) {
        // Before any SIGUSR1 (Node's way in), which ends a program that does not handle it.
        let pid = u32::try_from(pid).expect("bounded by the range check");
        let given = args.optional_string("language")?;
        if let Some(flavour) = Native::for_pid(pid, given)? {
            unmapped(&start, "a native program attached by pid")?;
            return attach_native(flavour, pid, start, call);
        }
    }
    if (args.has("target") || args.has("webRoot")) && port == 0 && url.is_none() {
        return Err(ArgError {
            field: "target".into(),
            problem: "a browser's page is attached to by the browser's debugging `port`".into(),
        }
        .into());
    }
    let ws_url = if let Some(url) = url {
        let authority =
            url.strip_prefix("ws://").and_then(|r| r.split('/').next()).ok_or_else(|| {
                Failure::from(ArgError {
                    field: "url".into(),
                    problem: "expected ws://HOST:PORT/ID".into(),
                })
            })?;
        let url_host = authority.rsplit_once(':').map_or(authority, |(h, _)| h);
        if !host_allowed(url_host) {
            return Err(refuse_host(url_host));
        }
        let path = url["ws://".len() + authority.len()..].to_string();
        if path.starts_with("/devtools/page/") {
            unmapped(&start, "a web page")?;
            return attach_page(args, url.to_string(), start, call);
        }
        if path.starts_with("/devtools/browser/") {
            return Err(ArgError {
                field: "url".into(),
                problem: "that is the browser's own endpoint, not a page's: pass the browser's \
                          `port` (and `target`, part of the page's URL or title)"
                    .into(),
            }
            .into());
        }
        let deno = authority
            .rsplit_once(':')
            .and_then(|(h, p)| Some((h, p.parse().ok()?)))
            .map(|(h, p)| matches!(inspector_kind(h, p), Ok(Inspector::Deno)));
        if deno == Some(true) {
            return attach_deno(url.to_string(), start, call);
        }
        url.to_string()
    } else if port != 0 {
        let port = port as u16;
        let url = || {
            crate::cdp::websocket_url(host, port, Duration::from_secs(5))
                .map_err(|m| Failure::new(Code::NoInspector, m))
        };
        match inspector_kind(host, port)? {
            Inspector::Browser => {
                let pages = crate::browser::pages(host, port, Duration::from_secs(5))
                    .map_err(|m| Failure::new(Code::NoInspector, m))?;
                let page = crate::browser::pick_page(&pages, args.optional_string("target")?)?;
                unmapped(&start, "a web page")?;
                return attach_page(args, page, start, call);
            }
            Inspector::Deno => return attach_deno(url()?, start, call),
            Inspector::Node => url()?,
        }
    } else {
        let pid = u32::try_from(pid).expect("bounded by the range check");
        inspector_of(pid, call)?
    };
    let (id, mut state) = open_session(call, |id, watch| {
        crate::cdp::session::attach(
            Box::new(Node { files: Files::attached(start.path_mappings.clone()) }),
            id,
            ws_url.clone(),
            start,
            watch,
            &call.cancel,
        )
    })?;
    if pid != 0 {
        // Port 9229 might belong to another process: make sure it is the one asked for.
        let seen = ask_session(call, Some(&id), Duration::ZERO, |reply| Command::Evaluate {
            expression: "process.pid".into(),
            frame: 0,
            max_chars: 100,
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

/// Which CDP runtime an inspector's endpoint belongs to.
enum Inspector {
    Node,
    Deno,
    Browser,
}

/// Tells Node's inspector from Deno's and a browser's by `/json/version` (`Browser`:
/// `node.js/v20…`, `Deno/2…`, `Chrome/…`, `HeadlessChrome/…`, `Edg/…`).
fn inspector_kind(host: &str, port: u16) -> Result<Inspector, Failure> {
    let version = crate::cdp::inspector_json(host, port, "version", Duration::from_secs(5))
        .map_err(|m| Failure::new(Code::NoInspector, m))?;
    let browser = version["Browser"].as_str().unwrap_or_default();
    Ok(if browser.starts_with("node.js") || browser.is_empty() {
        Inspector::Node
    } else if browser.starts_with("Deno") {
        Inspector::Deno
    } else {
        Inspector::Browser
    })
}

/// A page of a browser started with `--remote-debugging-port`: picked by `target`, debugged,
/// and let go at the end (the browser is never closed).
fn attach_page(args: &Args, url: String, start: AttachSpec, call: &Call) -> Result<Value, Failure> {
    let (root, strict) = page::web_root_arg(args, start.cwd.as_deref())?;
    let browser = crate::browser::Browser::attached(root, strict);
    let (_, mut state) = open_session(call, |id, watch| {
        crate::cdp::session::attach(Box::new(browser), id, url.clone(), start, watch, &call.cancel)
    })?;
    state["attached"] = json!({"url": url});
    Ok(state)
}

/// A Deno program started with `--inspect` (or `--inspect-brk`, `--inspect-wait`).
fn attach_deno(url: String, start: AttachSpec, call: &Call) -> Result<Value, Failure> {
    let (_, mut state) = open_session(call, |id, watch| {
        crate::cdp::session::attach(
            Box::new(Deno { files: Files::attached(start.path_mappings.clone()) }),
            id,
            url.clone(),
            start,
            watch,
            &call.cancel,
        )
    })?;
    state["attached"] = json!({"url": url});
    Ok(state)
}

/// A native program attached to by pid through its debug adapter (lldb-dap, Delve): the
/// session lets it go at the end.
fn attach_native(
    flavour: Native,
    pid: u32,
    start: AttachSpec,
    call: &Call,
) -> Result<Value, Failure> {
    let program = std::fs::read_link(format!("/proc/{pid}/exe")).unwrap_or_default();
    through_adapter(flavour, &program, start, json!({"pid": pid}), call)
}

/// A session through an adapter we start that attaches (the flavour's profile says to what):
/// `program` is the executable it reads; `attached` says to what, in the answer.
fn through_adapter(
    flavour: Native,
    program: &std::path::Path,
    start: AttachSpec,
    attached: Value,
    call: &Call,
) -> Result<Value, Failure> {
    let spec = LaunchSpec {
        command: crate::shell::CommandLine {
            words: vec![program.display().to_string()],
            cwd: start.cwd.clone(),
            ..crate::shell::CommandLine::default()
        },
        breakpoints: start.breakpoints,
        stop_on_entry: false,
        pause_on_exceptions: start.pause_on_exceptions,
        timeout: start.timeout,
    };
    let (_, mut state) = open_session(call, |id, watch| {
        crate::dap::session::launch(flavour, id, spec, watch, &call.cancel)
    })?;
    state["attached"] = attached;
    Ok(state)
}

/// Opens the inspector of Node process `pid` (SIGUSR1) and gives its WebSocket URL.
fn inspector_of(pid: u32, call: &Call) -> Result<String, Failure> {
    crate::sys::open_inspector(pid).map_err(|e| {
        Failure::new(
            Code::NoProcess,
            format!("cannot signal process {pid}: {e} (is it running, and yours?)"),
        )
    })?;
    let deadline = std::time::Instant::now() + OPEN_INSPECTOR_WAIT;
    loop {
        match crate::cdp::websocket_url("127.0.0.1", 9229, Duration::from_millis(500)) {
            Ok(url) => return Ok(url),
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
}

fn stop(args: &Args, call: &Call) -> Result<ToolResult, Failure> {
    let id = args.optional_string("sessionId")?;
    let (id, _) = call.sessions.find(id).map_err(|m| Failure::new(Code::NoSession, m))?;
    let last = call.sessions.list().into_iter().find(|s| s["sessionId"] == id.as_str());
    // Dropping the handle ends the session: its program is killed and its thread joined.
    drop(call.sessions.remove(&id));
    let last = last.map_or(Value::Null, |s| s["state"].clone());
    let stopped = json!({"sessionId": id, "stopped": true, "lastState": last});
    Ok(ToolResult::ok(Json::from(&stopped), Vec::new()))
}
