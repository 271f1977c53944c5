//! `debug-script`: run a program once under the debugger, evaluate an expression every time a
//! breakpoint is hit, and return the values in hit order with the program's exit and output.
//!
//! This file owns the contract (schema, argument checks, result and error shapes); the run
//! itself is `cdp::script`.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};

use crate::debugger::calls::{self, Traced};
use crate::debugger::limits::FAILURES_ANSWER;
use crate::debugger::script::{self, Language, Outcome, Plan, Probe};
use crate::debugger::trim;
use crate::debugger::{Code, Failure};
use crate::jsonrpc::Json;
use crate::native::Native;
use crate::shell::CommandLine;
use crate::tools::page::{self, Page};
use crate::tools::{
    command_arg, extend, in_dir, run_properties, ArgError, Args, Call, Tool, ToolResult,
};

pub(crate) const DEFAULT_TIMEOUT_MS: u64 = 30_000;
pub(crate) const MAX_TIMEOUT_MS: u64 = 600_000;
pub(crate) const DEFAULT_MAX_HITS: u64 = 10_000;
const MAX_MAX_HITS: u64 = 1_000_000;
const DEFAULT_MAX_FAILURES: u64 = 3;
const MAX_MAX_FAILURES: u64 = 100;

/// The language a command runs: the `language` argument when given, else from the
/// program's name.
pub(crate) fn language_arg(
    args: &Args,
    command: &CommandLine,
    breakpoint_files: &[&str],
) -> Result<Language, ArgError> {
    use crate::python::is_python;
    let shebang = || command.shebang().and_then(|(words, _)| words.into_iter().next());
    Ok(match language_given(args)? {
        Some(language) => language,
        None if is_python(&command.words[0]) => Language::Python,
        None if crate::deno::is_deno(&command.words[0]) => Language::Deno,
        // A console script (`venv/bin/pytest`) or a script with a Python `#!` line.
        None if shebang().is_some_and(|interpreter| is_python(&interpreter)) => Language::Python,
        // Whatever starts it (`make test`, a wrapper), a `.py` breakpoint is Python code.
        None if breakpoint_files.iter().any(|f| f.ends_with(".py")) => Language::Python,
        None if crate::jdwp::launch::is_java(command) => Language::Java,
        None if breakpoint_files.iter().any(|f| f.ends_with(".java")) => Language::Java,
        None if Native::claims(command, None, breakpoint_files) => Language::Native,
        None => Language::Node,
    })
}

/// The `language` argument, if given.
pub(crate) fn language_given(args: &Args) -> Result<Option<Language>, ArgError> {
    Ok(match args.optional_string("language")? {
        Some("python" | "debugpy") => Some(Language::Python),
        Some("node") => Some(Language::Node),
        Some("deno") => Some(Language::Deno),
        Some("java") => Some(Language::Java),
        Some(_) => Some(Language::Native),
        None => None,
    })
}

/// The schema of the `language` argument.
pub(crate) fn language_schema() -> Value {
    json!({"type": "string", "description": "node, deno, python, debugpy, java, c, cpp, rust, zig, go, gdb, or a debug-mcp.json adapter; else guessed"})
}

pub(crate) const TOOLS: &[Tool] = &[Tool {
    name: "debug-script",
    title: "Debug a script: evaluate an expression at a breakpoint",
    description: "Runs a program once under the debugger, to its end, and answers the value of \
        `expression` at every hit of `breakpoint`, in order and typed, with the exit code and \
        output; it never stays stopped. Give the command as typed (`pytest -q`, `npm test`, \
        `go test ./...`, `cargo test`): every process it starts is followed. A \
        `resolvedLine` unlike `line`: the breakpoint moved to code. `probes`: several lines in \
        one run; `failures: true`: why tests fail (exception, own frames, locals); `calls`: every \
        call of a file's functions, arguments and return, as a tree. A run reaching `timeout` \
        (or `hang` ms idle) says where threads wait.",
    properties,
    required: &[],
    read_only: false,
    output,
    run,
}];

fn breakpoint_properties() -> Value {
    json!({
        "file": {"type": "string"},
        "line": {"type": "integer", "minimum": 1},
        "condition": {"type": "string"}
    })
}

fn probe_properties() -> Value {
    let mut properties = breakpoint_properties();
    properties["expression"] = json!({"type": "string"});
    properties
}

fn calls_item() -> Value {
    json!({"type": "object", "properties": {"file": {"type": "string"}, "function": {"type": "string"}},
           "required": ["file"]})
}

fn properties() -> Value {
    let properties = json!({
        "command": {"type": "string"},
        "breakpoint": {
            "type": "object",
            "properties": breakpoint_properties(),
            "required": ["file", "line"]
        },
        "expression": {"type": "string"},
        "timeout": {"type": "integer", "minimum": 1, "maximum": MAX_TIMEOUT_MS, "description": "ms (30000); the program is killed then, after `hang` says where each thread was"},
        "hang": {"type": "integer", "minimum": 100, "maximum": MAX_TIMEOUT_MS, "description": "ms without a hit, output or process change ends the run as timeout does"},
        "maxHits": {"type": "integer", "minimum": 1, "maximum": MAX_MAX_HITS},
        "includeStack": {"type": "boolean"},
        "probes": {"type": "array", "minItems": 1, "items": {
            "type": "object",
            "properties": probe_properties(),
            "required": ["file", "line"]
        }, "description": "instead of breakpoint and expression; no expression: the locals"},
        "calls": {"type": "array", "minItems": 1, "items": calls_item(), "description": "every call of these functions (all of file's without function): args, return or throw, in call order; maxHits caps them (200)"},
        "failures": {"type": "boolean", "description": "record failing tests and uncaught errors"},
        "maxFailures": {"type": "integer", "minimum": 1, "maximum": MAX_MAX_FAILURES},
        "userUnhandled": {"type": "boolean", "description": "with failures: also errors that left own code into a library that caught them (a web framework's 500)"},
        "language": language_schema()
    });
    extend(extend(properties, run_properties(true)), page::properties(true))
}

fn output() -> Value {
    json!({
        "type": "object",
        "properties": {
            "results": {"type": "array", "items": {
                "type": "object",
                "properties": {
                    "probe": {"type": "integer", "description": "With `probes`: which probe (its index) this hit is of."},
                    "type": {"type": "string"},
                    "value": {},
                    "locals": {"type": "object", "description": "A probe without an expression: the frame's locals, {name: preview}, instead of type and value."},
                    "stack": {"type": "array", "items": {"type": "object", "properties": {
                        "function": {"type": "string"}, "file": {"type": "string"}, "line": {"type": "integer"}}}},
                    "pid": {"type": "integer", "description": "The process the hit ran in; only when hits came from more than one process or thread."},
                    "thread": {"type": "string", "description": "The worker thread it ran in, when not the process's main thread; only when hits came from more than one."}
                },
                "anyOf": [{"required": ["type", "value"]}, {"required": ["locals"]}]
            }},
            "breakpoint": {"type": "object", "properties": {
                "file": {"type": "string"}, "line": {"type": "integer"}, "resolvedLine": {"type": "integer"}}},
            "probes": {"type": "array", "items": {"type": "object", "properties": {
                "file": {"type": "string"}, "line": {"type": "integer"}, "resolvedLine": {"type": "integer"}}}},
            "calls": {"type": "array", "description": "Each traced call in the order they started; returned: it returned, its debugger did not say what (Delve; lldb for values returned in memory); none of return, returned, threw: it had not ended.", "items": {"type": "object", "properties": {
                "call": {"type": "integer"}, "function": {"type": "string"}, "file": {"type": "string"},
                "line": {"type": "integer"}, "depth": {"type": "integer"}, "parent": {"type": "integer"},
                "args": {"type": "object", "additionalProperties": {"type": "string"}},
                "return": {"type": "string"}, "returned": {"type": "boolean"},
                "threw": {"type": "object", "properties": {"type": {"type": "string"}, "message": {"type": "string"}}},
                "process": {"type": "integer"}}}},
            "callsOmitted": {"type": "object", "additionalProperties": {"type": "integer"}, "description": "calls past the cap, per function"},
            "failures": {"type": "array", "items": {"type": "object", "properties": {
                "kind": {"type": "string"}, "type": {"type": "string"}, "message": {"type": "string"},
                "test": {"type": "string"}, "process": {"type": "integer"},
                "frames": {"type": "array", "items": {"type": "object"}},
                "framesOmitted": {"type": "integer"},
                "threads": {"type": "array", "items": {"type": "object"}, "description": "a runtime's fatal error of no one thread (Go's deadlock): every thread as `hang` shows them"}}}},
            "moreFailures": {"type": "integer"},
            "exitCode": {"type": "integer"},
            "signal": {"type": "integer"},
            "timedOut": {"type": "boolean"},
            "hang": {"type": "object", "description": "Where each thread was when the program was killed for hanging (its timeout, or `hang`).", "properties": {
                "after": {"type": "integer", "description": "ms the program had run"},
                "threads": {"type": "array", "items": {"type": "object", "properties": {
                    "process": {"type": "integer"}, "thread": {"type": "string"},
                    "state": {"type": "string", "description": "what it waits on (lock, channel receive, sleep, join, I/O, idle…), blocked (a JavaScript thread in a native call), or running"},
                    "waiting": {"type": "array", "items": {"type": "string"}, "description": "an idle JavaScript thread: what keeps its event loop alive"},
                    "awaiting": {"type": "array", "items": {"type": "object"}, "description": "an idle JavaScript thread: the program's async functions suspended at an await (function, file, line, locals)"},
                    "frames": {"type": "array", "items": {"type": "object"}},
                    "framesOmitted": {"type": "integer"},
                    "sameStack": {"type": "integer", "description": "more threads with these frames and state (the locals are this one's)"}}}}}},
            "stopped": {"type": "array", "description": "Processes a signal had stopped (SIGSTOP, SIGTTIN): not ended; the run waited for its timeout.", "items": {"type": "object", "properties": {
                "pid": {"type": "integer"}, "signal": {"type": "string"}}}},
            "hitsCapped": {"type": "boolean"},
            "valuesTruncated": {"type": "boolean"},
            "processes": {"type": "array", "description": "The processes debugged, the started one first when it is the runtime's.", "items": {"type": "object", "properties": {
                "pid": {"type": "integer"}, "parent": {"type": "integer"}, "command": {"type": "string"},
                "hits": {"type": "integer"}, "threads": {"type": "array", "items": {"type": "string"}},
                "hitThread": {"type": "string", "description": "The worker thread every hit ran in, when hits came from one thread and it is a worker (hits then carry no pid or thread)."}}}},
            "undebugged": {"type": "object", "description": "What the program ran outside the debugger (child processes, as far as seen, and worker threads); present only when it ran any.",
                "properties": {
                    "processes": {"type": "array", "items": {"type": "object", "properties": {
                        "pid": {"type": "integer"}, "command": {"type": "string"}}}},
                    "workers": {"type": "integer"}}},
            "output": {"type": "object", "properties": {
                "stdout": {"type": "string"}, "stderr": {"type": "string"}, "truncated": {"type": "boolean"},
                "cut": {"type": "object", "description": "with failures: bytes left out of each stream (its tail and each failure's own line are kept)", "additionalProperties": {"type": "integer"}}}},
            "error": {"type": "string", "description": "Present only when the call failed."},
            "code": {"type": "string", "description": "A stable word for the kind of failure."}
        },
        "anyOf": [{"required": ["results"]}, {"required": ["error"]}]
    })
}

fn run(args: &Args, call: &Call) -> Result<ToolResult, Failure> {
    let page = page::page_arg(args, true)?;
    let plan = plan(args, page.as_ref())?;
    let outcome = match plan.language {
        Language::Browser => {
            let page = page.expect("a page's plan has its page");
            crate::cdp::script::run(Box::new(page.browser), &plan, call)
        }
        Language::Node => {
            crate::cdp::script::run(Box::new(crate::node::Node::default()), &plan, call)
        }
        Language::Deno => {
            crate::cdp::script::run(Box::new(crate::deno::Deno::default()), &plan, call)
        }
        Language::Python => crate::python::trace::run(&plan, call),
        Language::Java => crate::jdwp::script::run(&plan, call),
        Language::Native => {
            let watched: Vec<String> =
                plan.watched().iter().map(|p| p.file.display().to_string()).collect();
            let files: Vec<&str> = watched.iter().map(String::as_str).collect();
            let language = args.optional_string("language")?;
            let suite = Native::suite(&plan.command, language, &files)?;
            // (Binaries built ahead are removed when `_built` goes, after the runs.)
            let _built = suite.built;
            let programs = suite.programs.into_iter().map(|p| (p.command, p.native)).collect();
            crate::dap::script::run_each(programs, suite.notes, suite.fail_fast, &plan, call)
        }
    }?;
    Ok(render(&plan, outcome))
}

fn plan(args: &Args, page: Option<&Page>) -> Result<Plan, Failure> {
    let command = match page {
        Some(page) => page.command.clone(),
        None if !args.has("command") => {
            return Err(ArgError::new(
                "command",
                "required: the program to run (or `url`, a web page to debug)",
            )
            .into())
        }
        None => command_arg(args)?,
    };
    let timeout = args.integer("timeout", 1, MAX_TIMEOUT_MS, Some(DEFAULT_TIMEOUT_MS))?;
    let max_hits = args.integer("maxHits", 1, MAX_MAX_HITS, Some(DEFAULT_MAX_HITS))?;
    let include_stack = args.boolean("includeStack", false)?;
    let hang = match args.has("hang") {
        true => Some(Duration::from_millis(args.integer("hang", 100, MAX_TIMEOUT_MS, None)?)),
        false => None,
    };
    // Where a program hangs needs no breakpoint: `hang`, or a `timeout` of its own, asks it.
    let hang_only = hang.is_some() || args.has("timeout");
    let mut calls = Vec::new();
    if args.has("calls") {
        for traced in args.objects("calls")? {
            traced.deny_unknown_in(&calls_item()["properties"])?;
            let function = traced.optional_string("function")?.filter(|f| !f.trim().is_empty());
            calls.push((traced.string("file")?, function));
        }
        if calls.is_empty() {
            return Err(ArgError::new("calls", "give at least one: {file, function?}").into());
        }
    }
    let failures = match args.boolean("failures", false)? {
        true => {
            Some(args.integer("maxFailures", 1, MAX_MAX_FAILURES, Some(DEFAULT_MAX_FAILURES))?)
        }
        false => None,
    };
    let failures = failures.map(|n| u32::try_from(n).expect("bounded by the range check"));
    let user_unhandled = args.boolean("userUnhandled", false)?;
    if user_unhandled && failures.is_none() {
        return Err(ArgError::new("userUnhandled", "only with `failures: true`").into());
    }
    let mut probes = Vec::new();
    let (file, line, condition, expression) = match (args.has("probes"), args.has("breakpoint")) {
        (true, true) => {
            return Err(ArgError::new("probes", "give `probes` or `breakpoint`, not both").into())
        }
        (true, false) => {
            if args.has("expression") {
                return Err(ArgError::new(
                    "expression",
                    "with `probes`, each probe has its own `expression`",
                )
                .into());
            }
            for probe in args.objects("probes")? {
                let (file, line, condition) = line_arg(&probe, &probe_properties())?;
                probes.push((file, line, condition, probe.optional_string("expression")?));
            }
            let Some(&(file, line, condition, expression)) = probes.first() else {
                return Err(ArgError::new("probes", "give at least one probe: {file, line}").into());
            };
            (Some(file), line, condition, expression.unwrap_or_default())
        }
        (false, true) => {
            let (file, line, condition) =
                line_arg(&args.object("breakpoint")?, &breakpoint_properties())?;
            (Some(file), line, condition, args.string("expression")?)
        }
        (false, false) if failures.is_some() || hang_only || !calls.is_empty() => {
            (None, 0, None, "")
        }
        (false, false) => {
            return Err(ArgError::new(
                "breakpoint",
                "required: where to break (with `expression`), or `probes`, or `calls`, or \
                 `failures: true`, or `hang` (where a program that does not end hangs)",
            )
            .into())
        }
    };
    let files: Vec<&str> = (file.into_iter())
        .chain(probes.iter().map(|p| p.0))
        .chain(calls.iter().map(|c| c.0))
        .collect();
    let language = match page {
        Some(_) => Language::Browser,
        None => language_arg(args, &command, &files)?,
    };
    if user_unhandled && matches!(language, Language::Native) {
        let why = "a compiled program's exceptions are not caught by a library: give `failures` \
                   alone (panics, signals and failing tests are failures already)";
        return Err(ArgError::new("userUnhandled", why).into());
    }
    let place = |file: &str, line: u64| -> Result<(PathBuf, PathBuf, u32), Failure> {
        let line = u32::try_from(line).expect("bounded by the range check");
        let (file, real_file) =
            match page.and_then(|_| page::served_path(file, command.cwd.as_deref())) {
                // A page's source named by its URL: not on disk, perhaps only in a map.
                Some(path) => (path.clone(), path),
                None => check_file(&in_dir(file, command.cwd.as_deref()), line)?,
            };
        if let Some(page) = page {
            page::check_served(page, &file)?;
        }
        Ok((file, real_file, line))
    };
    let (file, real_file, line) = match file {
        Some(file) => place(file, line)?,
        None => (PathBuf::new(), PathBuf::new(), 0),
    };
    let probes = probes
        .into_iter()
        .map(|(file, line, condition, expression)| {
            let (file, real_file, line) = place(file, line)?;
            Ok(Probe {
                file,
                real_file,
                line,
                condition: condition.map(String::from),
                expression: expression.map(String::from),
            })
        })
        .collect::<Result<Vec<_>, Failure>>()?;
    let calls = calls
        .into_iter()
        .map(|(file, function)| {
            let (file, real_file, _) = place(file, 1)?;
            Ok(Traced { file, real_file, function: function.map(String::from) })
        })
        .collect::<Result<Vec<_>, Failure>>()?;
    let max_calls = match args.has("maxHits") {
        true => max_hits as usize,
        false => calls::DEFAULT_MAX_CALLS,
    };
    Ok(Plan {
        command,
        file,
        real_file,
        line,
        condition: condition.map(String::from),
        expression: expression.to_string(),
        timeout: Duration::from_millis(timeout),
        language,
        max_hits,
        include_stack,
        probes,
        failures,
        user_unhandled,
        hang,
        calls,
        max_calls,
    })
}

/// A `breakpoint`'s or a probe's `{file, line, condition?}` (`schema`: every field it may
/// have); a blank condition is none.
fn line_arg<'a>(
    object: &Args<'a>,
    schema: &Value,
) -> Result<(&'a str, u64, Option<&'a str>), ArgError> {
    object.deny_unknown_in(schema)?;
    let file = object.string("file")?;
    let line = object.integer("line", 1, u64::from(u32::MAX), None)?;
    let condition = object.optional_string("condition")?.filter(|c| !c.trim().is_empty());
    Ok((file, line, condition))
}

/// Resolves the breakpoint's file against the server's cwd and checks the line exists, so a
/// typo fails now rather than after the timeout.
pub(crate) fn check_file(file: &Path, line: u32) -> Result<(PathBuf, PathBuf), Failure> {
    let absolute = std::path::absolute(file).unwrap_or_else(|_| file.to_path_buf());
    let not_found = |why: String| {
        Failure::new(Code::FileNotFound, why).with("file", absolute.display().to_string().into())
    };
    let (real, lines) = match fs::canonicalize(&absolute) {
        Ok(real) => {
            let bytes = fs::read(&real).map_err(|e| {
                not_found(format!("cannot read breakpoint file {}: {e}", real.display()))
            })?;
            if real.is_dir() {
                return Err(not_found(format!(
                    "breakpoint file {} is a directory",
                    real.display()
                )));
            }
            (real, count_lines(&bytes))
        }
        // Only in a source map's `sourcesContent` (a package shipping its build, not its src/).
        Err(e) => match crate::cdp::maps::original_text(&absolute) {
            Some(text) => (crate::sourcemap::normalize(&absolute), count_lines(text.as_bytes())),
            None => {
                return Err(not_found(format!(
                    "breakpoint file {} not found ({e}), nor in the sourcesContent of a source \
                     map near it; relative paths resolve against {}",
                    absolute.display(),
                    std::env::current_dir().map(|d| d.display().to_string()).unwrap_or_default()
                )))
            }
        },
    };
    if u64::from(line) > lines {
        return Err(Failure::new(
            Code::LineOutOfRange,
            format!("line {line} is past the end of {} ({lines} lines)", absolute.display()),
        )
        .with("file", absolute.display().to_string().into())
        .with("lines", lines.into()));
    }
    Ok((absolute, real))
}

fn count_lines(bytes: &[u8]) -> u64 {
    let newlines = bytes.iter().filter(|&&b| b == b'\n').count() as u64;
    if bytes.last().is_some_and(|&b| b != b'\n') {
        newlines + 1
    } else {
        newlines
    }
}

fn render(plan: &Plan, outcome: Outcome) -> ToolResult {
    let mut breakpoint = json!({"file": plan.file.display().to_string(), "line": plan.line});
    let mut notes = plan.command.notes.clone();
    let probes: Vec<Value> = plan
        .probes
        .iter()
        .enumerate()
        .map(|(index, probe)| {
            let mut shown = json!({"file": probe.file.display().to_string(), "line": probe.line});
            if let Some(Some(line)) =
                outcome.probe_lines.get(index).filter(|l| l.is_some_and(|l| l > 0))
            {
                shown["resolvedLine"] = (*line).into();
                if *line != probe.line {
                    notes.push(format!(
                        "Note: probe {index} was asked for line {} and placed at line {line}, \
                         the nearest line with code before it.",
                        probe.line
                    ));
                }
            }
            shown
        })
        .collect();
    if let Some(file) = &outcome.resolved_file {
        breakpoint["resolvedFile"] = file.as_str().into();
        notes.push(format!("Note: the breakpoint landed in {file}, not in the file asked for."));
    }
    if !outcome.generated.is_empty() {
        breakpoint["generated"] = outcome.generated.clone().into();
    }
    if let Some(resolved) = outcome.resolved_line.filter(|_| plan.probes.is_empty()) {
        breakpoint["resolvedLine"] = resolved.into();
        if resolved != plan.line {
            let debugger = match plan.language {
                Language::Node | Language::Deno | Language::Browser => "V8",
                Language::Python => "Python",
                Language::Java => "the JVM",
                Language::Native => "the debug adapter",
            };
            notes.push(format!(
                "Note: the breakpoint was requested at line {} but {debugger} placed it at line \
                 {resolved}, the nearest position with code; values are from line {resolved}.",
                plan.line
            ));
        }
    }
    if outcome.timed_out {
        let why = match (outcome.quiet, plan.hang) {
            (true, Some(hang)) => format!(
                "No hit, output or process change for {} ms (`hang`): the program was taken for hung",
                hang.as_millis()
            ),
            _ => format!("The program was still running after {} ms", plan.timeout.as_millis()),
        };
        let hang = match outcome.hang.is_some() {
            true => "; where each thread was then is in `hang`",
            false => "",
        };
        notes.push(format!(
            "{why} and was killed{hang}; the {} hit(s) before that are in results.",
            outcome.results.len()
        ));
    }
    if outcome.hits_capped {
        notes.push(format!(
            "Stopped collecting after maxHits={} hits; the program then ran on without the breakpoint.",
            plan.max_hits
        ));
    }
    let output = match plan.failures {
        Some(_) => trim::for_failures(&outcome.output, &outcome.failures, trim::STREAM),
        None => outcome.output.clone(),
    };
    let mut structured = json!({
        "timedOut": outcome.timed_out,
        "hitsCapped": outcome.hits_capped,
        "output": output,
    });
    if !probes.is_empty() {
        structured["probes"] = probes.into();
    } else if plan.has_breakpoint() {
        structured["breakpoint"] = breakpoint;
    }
    if plan.failures.is_some() {
        structured["failures"] = outcome.failures.clone().into();
        if outcome.more_failures > 0 {
            structured["moreFailures"] = outcome.more_failures.into();
            notes.push(format!(
                "{} more failure(s) after maxFailures={} were counted, not recorded.",
                outcome.more_failures,
                plan.failures.unwrap_or(0)
            ));
        }
    }
    if let Some(exit) = outcome.exit {
        if let Some(code) = exit.code {
            structured["exitCode"] = code.into();
        }
        if let Some(signal) = exit.signal {
            structured["signal"] = signal.into();
        }
    }
    if !outcome.processes.is_empty() {
        structured["processes"] = outcome.processes.clone().into();
    }
    notes.extend(outcome.notes.iter().cloned());
    if let Some(hang) = &outcome.hang {
        structured["hang"] = hang.clone();
    }
    if !plan.calls.is_empty() {
        let (calls, omitted) = outcome.calls.json();
        let count = calls.as_array().map_or(0, Vec::len);
        structured["calls"] = calls;
        if let Some(omitted) = omitted {
            let left: u64 =
                omitted.as_object().into_iter().flatten().filter_map(|(_, n)| n.as_u64()).sum();
            notes.push(format!(
                "{count} call(s) traced; {left} more past the cap (maxHits) are counted in callsOmitted."
            ));
            structured["callsOmitted"] = omitted;
        }
    }
    if let Some(stopped) = script::stopped_json(&outcome.stopped) {
        structured["stopped"] = stopped;
        let then = "the run went on to its timeout, then killed it";
        notes.extend(script::stopped_note(&outcome.stopped, then));
    }
    if let Some(note) = outcome.undebugged.note() {
        structured["undebugged"] = outcome.undebugged.to_json();
        notes.push(note);
    }
    if outcome.values_truncated {
        structured["valuesTruncated"] = true.into();
        notes.push(
            "Some values were truncated to keep the answer small (marked `… [truncated`).".into(),
        );
    }
    if plan.failures.is_some() {
        fit_failures(&mut structured, &outcome, &notes);
    }
    // The hits are already JSON text: splice them in rather than parse them into a tree.
    let rest = structured.to_string();
    let text = format!(r#"{{"results":[{}],{}"#, outcome.results.join(","), &rest[1..]);
    ToolResult::ok(Json::from_serialized(text), notes)
}

/// A `failures` answer within [`FAILURES_ANSWER`] bytes whole (its notes and the text block
/// that repeats the structured content, escaped, beside it) where it can be: the output's
/// streams cut further, to [`trim::STREAM_LEAST`], when the failures take the room.
fn fit_failures(structured: &mut Value, outcome: &Outcome, notes: &[String]) {
    // The hits' JSON is spliced in as it is (twice, `"results":[…],` in each block).
    let results: usize = outcome.results.iter().map(|r| 2 * (r.len() + 1) + 13).sum();
    let whole = |structured: &Value| {
        let answer = ToolResult::ok(Json::from(structured), notes.to_vec()).into_json(false);
        answer.as_str().len() + results
    };
    let mut stream = trim::STREAM;
    let mut over = whole(structured).saturating_sub(FAILURES_ANSWER);
    while over > 0 && stream > trim::STREAM_LEAST {
        // Each byte of a stream counts twice (the text block repeats it), in two streams.
        stream = stream.saturating_sub(over / 4 + 16).max(trim::STREAM_LEAST);
        structured["output"] = trim::for_failures(&outcome.output, &outcome.failures, stream);
        over = whole(structured).saturating_sub(FAILURES_ANSWER);
    }
}

/// Renders a failure: its message, code and details (the hint, the exit, the end of the
/// program's output) are all in the structured content, which is also the one text block.
pub(crate) fn render_failure(failure: Failure) -> Option<ToolResult> {
    let Failure::Error { code, message, details } = failure else {
        return None;
    };
    Some(ToolResult::error(code, message, details))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_failures_with_long_records_cut_the_output_to_fit() {
        let record = |n: usize| {
            json!({"kind": "test", "type": "AssertionError", "test": format!("T.t{n}"),
                   "message": "x".repeat(700), "frames": [{"locals": {"a": "y".repeat(300)}}]})
        };
        let lines: String =
            (0..400).map(|i| format!("line {i} of the runner's output\n")).collect();
        let mut outcome = Outcome::default();
        outcome.failures = (0..3).map(record).collect();
        outcome.output = json!({"stdout": lines, "stderr": lines, "truncated": false});
        let notes = vec!["a note".to_string()];
        let mut structured = json!({"failures": outcome.failures.clone(),
            "output": trim::for_failures(&outcome.output, &outcome.failures, trim::STREAM)});
        fit_failures(&mut structured, &outcome, &notes);
        let whole = ToolResult::ok(Json::from(&structured), notes).into_json(false);
        assert!(whole.as_str().len() <= FAILURES_ANSWER, "{}", whole.as_str().len());
        let stdout = structured["output"]["stdout"].as_str().unwrap();
        assert!(stdout.ends_with("line 399 of the runner's output\n"), "the tail stays: {stdout}");
    }

    #[test]
    fn counts_lines_like_an_editor() {
        for (text, lines) in [("", 0), ("a", 1), ("a\n", 1), ("a\nb", 2), ("a\n\n", 2)] {
            assert_eq!(count_lines(text.as_bytes()), lines, "{text:?}");
        }
    }
}
