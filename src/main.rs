//! debug-mcp: an MCP server (JSON-RPC over stdio) that lets AI agents debug real programs.
//!
//! This file reads the command line, wires the pieces together, and is the only place that
//! decides the exit code. `debug-mcp-server` alone serves MCP on stdin/stdout (`server.rs`);
//! `debug-mcp-server run ...` runs the `debug-script` tool once and prints its result.

mod browser;
mod call;
mod cdp;
mod dap;
mod debugger;
mod deno;
mod http;
mod jdwp;
mod jsonrpc;
mod log;
mod mcp;
mod native;
mod net;
mod node;
mod process;
mod python;
mod quota;
mod scratch;
mod server;
mod sessions;
mod shell;
mod sourcemap;
mod stdio;
mod sys;
mod tasks;
mod thread;
mod tools;

use std::process::ExitCode;
use std::sync::atomic::AtomicU8;
use std::sync::Arc;

use serde_json::{Map, Value};

const USAGE: &str = "\
debug-mcp: a debugger for AI agents, as an MCP server on stdio. It debugs Node.js, Deno and
web pages (headless Chromium), Python, Java, C, C++, Rust, Zig and Go, and any debug adapter
that debug-mcp.json names.

Usage:
  debug-mcp-server          serve MCP (JSON-RPC, one message per line) on stdin/stdout
  debug-mcp-server --http ADDR [--token-file FILE] [--allowed-host NAME]...
                            serve MCP over Streamable HTTP at http://ADDR/mcp (e.g.
                            127.0.0.1:8765; port 0 picks one, said on stderr). With tokens
                            (FILE: one per line, mode 600; or DEBUG_MCP_HTTP_TOKEN) clients
                            send `Authorization: Bearer TOKEN`, and a client is its token;
                            without, only this user's processes are served, on loopback.
                            Requests must name a loopback host, the bound address or NAME
  debug-mcp-server run --break FILE:LINE --eval EXPR [options] -- COMMAND...
  debug-mcp-server run --break FILE:LINE --eval EXPR [options] --url URL
  debug-mcp-server run --probe FILE:LINE[=EXPR]... [options] -- COMMAND...
  debug-mcp-server run --failures [options] -- COMMAND...
  debug-mcp-server run --hang MS [options] -- COMMAND...
  debug-mcp-server run --calls FILE[:FUNCTION]... [options] -- COMMAND...
                            run the debug-script tool once and print its result as JSON
  debug-mcp-server --help | --version

Options for run:
  --break FILE:LINE    where to break (1-based line)
  --eval EXPR          expression in the program's language (JavaScript, Python, C, C++,
                       Rust, Go, ...) evaluated at every hit
  --condition EXPR     only count hits where EXPR is truthy
  --timeout MS         limit for the whole run (default 30000); a program still running then
                       is killed, after `hang` in the answer says where each thread was
  --hang MS            no hit, output or process change for MS ends the run the same way
                       (with neither --break nor --probe: only where it hangs)
  --max-hits N         stop collecting after N hits (default 10000)
  --include-stack      also report the top stack frames of each hit
  --probe FILE:LINE[=EXPR]
                       instead of --break/--eval, repeatable: results in execution order,
                       each with its probe's index; without =EXPR, the frame's locals
  --calls FILE[:FUNCTION]
                       repeatable: every call of FUNCTION (of every function of FILE) in
                       the order they started, with its arguments and return value or throw;
                       --max-hits caps them (default 200)
  --failures           record each failing test and uncaught error: its exception, the
                       program's own frames and their locals
  --max-failures N     how many failures to record (default 3)
  --url URL            a web page to debug instead of a command (headless Chromium)
  --until WHEN         with --url: when the run ends: load (default), idle, or milliseconds

Exit status of run: 0 on success, 1 when the tool reports an error, 2 for bad usage.

Environment:
  DEBUG_MCP_LOG=debug  diagnostics on stderr (off, error, warn, info, debug)
  DEBUG_MCP_HTTP_TOKEN the bearer token of --http, without --token-file

Example:
  debug-mcp-server run --break fixtures/loop.js:4 --eval 'total' -- node fixtures/loop.js
";

/// `--http`'s arguments: the address, `--token-file FILE` and each `--allowed-host NAME`.
fn http_arguments(args: &[String]) -> Option<(String, Option<String>, Vec<String>)> {
    let (address, mut rest) = args.split_first()?;
    let (mut file, mut hosts) = (None, Vec::new());
    while let [flag, value, more @ ..] = rest {
        match flag.as_str() {
            "--token-file" if file.is_none() => file = Some(value.clone()),
            "--allowed-host" => hosts.push(value.clone()),
            _ => return None,
        }
        rest = more;
    }
    (rest.is_empty() && !address.starts_with('-')).then(|| (address.clone(), file, hosts))
}

/// What the server leaves when it ends: our Python modules' compiled code kept for the next
/// server (`python/helpers.rs`), and no scratch directory.
fn end_scratch() {
    python::keep_compiled();
    scratch::remove();
}

fn main() -> ExitCode {
    sys::limit_malloc_arenas();
    // Before any debuggee starts: what they abandon comes back to us to be killed and reaped.
    sys::become_subreaper();
    log::init_from_env();
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        None => {
            scratch::remove_stale();
            let served = server::run();
            end_scratch();
            match served {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    log::error(format_args!("{e}"));
                    ExitCode::FAILURE
                }
            }
        }
        Some("--help" | "-h" | "help") => {
            stdio::print(USAGE);
            ExitCode::SUCCESS
        }
        Some("--version" | "-V") => {
            let (name, version) = (env!("CARGO_PKG_NAME"), env!("CARGO_PKG_VERSION"));
            stdio::print(&format!("{name} {version}\n"));
            ExitCode::SUCCESS
        }
        Some("--http") => {
            let (address, file, hosts) = match http_arguments(&args[1..]) {
                Some(parsed) => parsed,
                None => {
                    eprintln!(
                        "debug-mcp-server --http: give ADDR [--token-file FILE] \
                         [--allowed-host NAME]...\n\n{USAGE}"
                    );
                    return ExitCode::from(2);
                }
            };
            let tokens = match http::tokens(file.as_deref()) {
                Ok(tokens) => tokens,
                Err(problem) => {
                    eprintln!("debug-mcp-server --http: {problem}");
                    return ExitCode::from(2);
                }
            };
            scratch::remove_stale();
            let served = http::run(http::Options { address: address.clone(), tokens, hosts });
            end_scratch();
            match served {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("debug-mcp-server --http {address}: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Some("run") => match run_arguments(&args[1..]) {
            Ok(arguments) => {
                scratch::remove_stale();
                let code = run_once(&arguments);
                end_scratch();
                code
            }
            Err(problem) => {
                eprintln!("debug-mcp-server run: {problem}\n\n{USAGE}");
                ExitCode::from(2)
            }
        },
        Some(other) => {
            eprintln!("debug-mcp-server: unknown argument `{other}`\n\n{USAGE}");
            ExitCode::from(2)
        }
    }
}

/// Turns `run`'s flags into the tool's arguments, so both faces share one code path.
fn run_arguments(args: &[String]) -> Result<Value, String> {
    let mut arguments = Map::new();
    let mut breakpoint = Map::new();
    let mut probes = Vec::new();
    let mut calls = Vec::new();
    let mut words = args.iter();
    let mut command = Vec::new();
    while let Some(flag) = words.next() {
        let mut value =
            |name: &str| words.next().cloned().ok_or_else(|| format!("{name} needs a value"));
        match flag.as_str() {
            "--break" => {
                let spec = value("--break")?;
                let (file, line) = file_line("--break", &spec, &spec, "FILE:LINE")?;
                breakpoint.insert("file".into(), file.into());
                breakpoint.insert("line".into(), line.into());
            }
            "--calls" => {
                let spec = value("--calls")?;
                let mut traced = Map::new();
                // FILE:FUNCTION, or FILE alone (a function name holds no `/`).
                match spec.rsplit_once(':').filter(|(_, f)| !f.is_empty() && !f.contains('/')) {
                    Some((file, function)) => {
                        traced.insert("file".into(), file.into());
                        traced.insert("function".into(), function.into());
                    }
                    None => {
                        traced.insert("file".into(), spec.into());
                    }
                }
                calls.push(Value::Object(traced));
            }
            "--probe" => {
                let spec = value("--probe")?;
                let (place, expression) = match spec.split_once('=') {
                    Some((place, expression)) => (place, Some(expression)),
                    None => (spec.as_str(), None),
                };
                let (file, line) =
                    file_line("--probe", &spec, place, "FILE:LINE or FILE:LINE=EXPR")?;
                let mut probe = Map::new();
                probe.insert("file".into(), file.into());
                probe.insert("line".into(), line.into());
                if let Some(expression) = expression {
                    probe.insert("expression".into(), expression.into());
                }
                probes.push(Value::Object(probe));
            }
            "--failures" => {
                arguments.insert("failures".into(), true.into());
            }
            "--eval" => {
                arguments.insert("expression".into(), value("--eval")?.into());
            }
            "--condition" => {
                breakpoint.insert("condition".into(), value("--condition")?.into());
            }
            "--timeout" | "--hang" | "--max-hits" | "--max-failures" => {
                let name = match flag.as_str() {
                    "--timeout" => "timeout",
                    "--hang" => "hang",
                    "--max-hits" => "maxHits",
                    _ => "maxFailures",
                };
                let text = value(flag)?;
                let n: u64 =
                    text.parse().map_err(|_| format!("{flag}: `{text}` is not a whole number"))?;
                arguments.insert(name.into(), n.into());
            }
            "--include-stack" => {
                arguments.insert("includeStack".into(), true.into());
            }
            "--url" => {
                arguments.insert("url".into(), value("--url")?.into());
            }
            "--until" => {
                let text = value("--until")?;
                let until = text.parse::<u64>().map_or_else(|_| Value::from(text), Value::from);
                arguments.insert("until".into(), until);
            }
            "--" => {
                command = words.cloned().collect();
                break;
            }
            other => return Err(format!("unknown option `{other}` (put the command after `--`)")),
        }
    }
    let page = arguments.contains_key("url");
    if command.is_empty() && !page {
        return Err("no command: put it after `--`, e.g. `-- node app.js` (or give --url)".into());
    }
    if page && !command.is_empty() {
        return Err("give a command after `--` or --url, not both".into());
    }
    if !page {
        arguments.insert("command".into(), shell::join(&command).into());
    }
    if !calls.is_empty() {
        arguments.insert("calls".into(), calls.into());
        if breakpoint.is_empty() && probes.is_empty() {
            return Ok(Value::Object(arguments));
        }
    }
    if !probes.is_empty() {
        if !breakpoint.is_empty() || arguments.contains_key("expression") {
            return Err("give --probe or --break with --eval, not both".into());
        }
        arguments.insert("probes".into(), probes.into());
        return Ok(Value::Object(arguments));
    }
    let hang = ["failures", "hang", "timeout"].iter().any(|k| arguments.contains_key(*k));
    if breakpoint.is_empty() && hang {
        return Ok(Value::Object(arguments));
    }
    if breakpoint.is_empty() {
        return Err("--break FILE:LINE is required (or --probe, --failures, or --hang)".into());
    }
    if !arguments.contains_key("expression") {
        return Err("--eval EXPR is required".into());
    }
    arguments.insert("breakpoint".into(), Value::Object(breakpoint));
    Ok(Value::Object(arguments))
}

/// `FILE:LINE` (`place`, of the value `spec` of `flag`, which takes `form`) split.
fn file_line<'s>(
    flag: &str,
    spec: &str,
    place: &'s str,
    form: &str,
) -> Result<(&'s str, u64), String> {
    let (file, line) = place.rsplit_once(':').ok_or_else(|| format!("{flag} takes {form}"))?;
    let line = line.parse().map_err(|_| format!("{flag} {spec}: `{line}` is not a line number"))?;
    Ok((file, line))
}

fn run_once(arguments: &Value) -> ExitCode {
    // Ctrl-C reaches only us (the debuggee has its own process group): cancel, so the run
    // kills the debuggee before we exit.
    let signals = match sys::Signals::install() {
        Ok(signals) => Arc::new(signals),
        Err(e) => {
            log::error(format_args!("{e}"));
            return ExitCode::FAILURE;
        }
    };
    let (cancel_tx, cancel) = crossbeam_channel::bounded(1);
    let watcher = {
        let signals = signals.clone();
        thread::JoinOnDrop::spawn("signals", move || {
            if signals.wait() != 0 {
                let _ = cancel_tx.send(());
            }
        })
    };
    // Notifications have nowhere to go in this mode.
    let (out, _) = crossbeam_channel::unbounded();
    let call = tools::Call {
        call: call::Call {
            cancel,
            progress: tools::Progress::new(None, out.clone()),
            log: tools::ClientLog { level: Arc::new(AtomicU8::new(u8::MAX)), out },
        },
        sessions: sessions::Sessions::default(),
    };
    let result = tools::call("debug-script", arguments, &call);
    signals.wake();
    drop(watcher);
    match result {
        Some(result) => {
            let printed: Value =
                serde_json::from_str(result.structured.as_str()).expect("tools produce valid JSON");
            let text = serde_json::to_string_pretty(&printed).expect("JSON values serialise");
            stdio::print(&format!("{text}\n"));
            if result.is_error() {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            }
        }
        None => ExitCode::from(130),
    }
}
