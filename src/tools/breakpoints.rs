//! `debug-breakpoint`: setting, removing and listing breakpoints and watchpoints, and which
//! exceptions stop the program; and the breakpoint fields `debug-launch` takes too.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};

use crate::debugger::model::BreakpointSpec;
use crate::debugger::session::{Command, Reply};
use crate::debugger::Failure;
use crate::tools::script::check_file;
use crate::tools::{
    answer, any_object, ask, in_dir, one_of, session_cwd, session_id, with_session, ArgError, Args,
    Call, Tool,
};

/// Which exceptions stop a session: `userUnhandled` stops where one leaves the program's own
/// code into a library's (a web framework that answers 500 for it) and where one is uncaught.
pub(crate) const EXCEPTION_STATES: &[&str] = &["none", "uncaught", "userUnhandled", "all"];

pub(crate) fn pause_on_exceptions_schema() -> Value {
    json!({"type": "string", "enum": EXCEPTION_STATES})
}

/// Which exceptions stop the program: `field`'s state, and `includeLibraries`.
pub(crate) fn pause_on_exceptions(args: &Args, call: &Call, field: &str) -> Reply {
    let state = args.choice(field, EXCEPTION_STATES, None)?.to_string();
    let include_libraries = args.boolean("includeLibraries", false)?;
    let set = |reply| Command::PauseOnExceptions { state, include_libraries, reply };
    ask(args, call, Duration::ZERO, set)
}

pub(crate) const TOOLS: &[Tool] = &[Tool {
    name: "debug-breakpoint",
    title: "Breakpoints, watchpoints and exception stops",
    description: "Sets a breakpoint at `file`:`line` (`logMessage` logs instead of stopping), \
        a watchpoint (`data`: stop when that variable is written), removes one (`remove`: its \
        id), or says which `exceptions` stop. With no arguments, lists them.",
    properties: || {
        let mut properties = with_session(breakpoint_properties());
        properties["data"] = json!({"type": "string"});
        properties["access"] = json!({"type": "string", "enum": ["write", "read", "readWrite"]});
        properties["remove"] = json!({"type": "string"});
        properties["exceptions"] = pause_on_exceptions_schema();
        properties["includeLibraries"] = json!({"type": "boolean", "description": "with all: also those libraries raise and catch"});
        properties
    },
    required: &[],
    read_only: false,
    output: any_object,
    run: |args, call| {
        one_of(args, &["file", "data", "remove", "exceptions"])?;
        if args.has("includeLibraries") && !args.has("exceptions") {
            return Err(ArgError::new("includeLibraries", "only with `exceptions`").into());
        }
        if args.has("remove") {
            answer(remove(args, call, "remove"))
        } else if args.has("exceptions") {
            answer(pause_on_exceptions(args, call, "exceptions"))
        } else if args.has("file") || args.has("data") || args.has("line") {
            answer(set(args, call))
        } else {
            answer(list(args, call))
        }
    },
}];

/// Former names, still answered: `debug-breakpoint` sets, removes and lists.
pub(crate) const FORMER: &[Tool] = &[
    Tool {
        name: "debug-set-breakpoint",
        title: "Set a breakpoint or a watchpoint",
        description: "Former name of debug-breakpoint with `file` and `line`, or `data`.",
        properties: || {
            let mut properties = with_session(breakpoint_properties());
            properties["data"] = json!({"type": "string"});
            properties["access"] = json!({"type": "string"});
            properties
        },
        required: &[],
        read_only: false,
        output: any_object,
        run: |args, call| answer(set(args, call)),
    },
    Tool {
        name: "debug-remove-breakpoint",
        title: "Remove a breakpoint",
        description: "Former name of debug-breakpoint with `remove`.",
        properties: || json!({"sessionId": session_id(), "breakpointId": {"type": "string"}}),
        required: &["breakpointId"],
        read_only: false,
        output: any_object,
        run: |args, call| answer(remove(args, call, "breakpointId")),
    },
    Tool {
        name: "debug-list-breakpoints",
        title: "List breakpoints",
        description: "Former name of debug-breakpoint with no arguments.",
        properties: || json!({"sessionId": session_id()}),
        required: &[],
        read_only: true,
        output: any_object,
        run: |args, call| answer(list(args, call)),
    },
];

/// A breakpoint (`file`, `line`) or a watchpoint (`data`), set in the session.
fn set(args: &Args, call: &Call) -> Reply {
    if let Some(expression) = args.optional_string("data")? {
        for field in ["file", "line", "column", "condition", "logMessage", "hitCount"] {
            if args.has(field) {
                return Err(ArgError {
                    field: field.into(),
                    problem: "a watchpoint (`data`) takes no file, line, condition, logMessage \
                              or hitCount"
                        .into(),
                }
                .into());
            }
        }
        let expression = expression.to_string();
        let access = args.choice("access", &["write", "read", "readWrite"], Some("write"))?;
        let access = access.to_string();
        let set = |reply| Command::SetWatchpoint { expression, access, reply };
        return ask(args, call, Duration::ZERO, set);
    }
    if !args.has("file") || !args.has("line") {
        let field = if args.has("file") { "line" } else { "file" };
        return Err(ArgError {
            field: field.into(),
            problem: "give `file` and `line` for a breakpoint, or `data` for a watchpoint".into(),
        }
        .into());
    }
    let spec = breakpoint_spec(args, session_cwd(args, call)?.as_deref())?;
    ask(args, call, Duration::ZERO, |reply| Command::SetBreakpoint { spec, reply })
}

/// Removes the breakpoint whose id `field` holds.
fn remove(args: &Args, call: &Call, field: &str) -> Reply {
    let id = args.string(field)?.to_string();
    ask(args, call, Duration::ZERO, |reply| Command::RemoveBreakpoint { id, reply })
}

fn list(args: &Args, call: &Call) -> Reply {
    ask(args, call, Duration::ZERO, |reply| Command::ListBreakpoints { reply })
}

/// The fields of one breakpoint.
pub(crate) fn breakpoint_properties() -> Value {
    json!({
        "file": {"type": "string"},
        "line": {"type": "integer", "minimum": 1},
        "column": {"type": "integer", "minimum": 1},
        "condition": {"type": "string"},
        "logMessage": {"type": "string", "description": "logs it; {expr} evaluated"},
        "hitCount": {"type": "integer", "minimum": 1, "description": "stops from hit N on"}
    })
}

/// One breakpoint's fields, checked (the file exists, the line is in it). Unknown fields are
/// refused by the caller: the tool for `debug-set-breakpoint`'s own arguments, here for an
/// entry of `breakpoints`.
/// `cwd`: where relative paths resolve (else the server's directory).
pub(crate) fn breakpoint_spec(bp: &Args, cwd: Option<&Path>) -> Result<BreakpointSpec, Failure> {
    if bp.is_nested() {
        bp.deny_unknown_in(&breakpoint_properties())?;
    }
    let file = bp.string("file")?;
    let line = bp.integer("line", 1, u64::from(u32::MAX), None)?;
    let line = u32::try_from(line).expect("bounded by the range check");
    let column = match bp.integer("column", 1, u64::from(u32::MAX), Some(0))? {
        0 => None,
        column => Some(u32::try_from(column).expect("bounded by the range check")),
    };
    let text = |name| -> Result<Option<String>, Failure> {
        Ok(bp.optional_string(name)?.filter(|c| !c.trim().is_empty()).map(String::from))
    };
    let remote = crate::debugger::paths::unmarked(file).map(|_| PathBuf::from(file));
    let (file, real_file) = match remote.or_else(|| crate::tools::page::served_path(file, cwd)) {
        // A page's source named by its URL: not on disk, perhaps only in a map. A file of a
        // program attached to that is not here (`remote:/usr/lib/x.js`, as answers show it).
        Some(path) => (path.clone(), path),
        None => check_file(&in_dir(file, cwd), line)?,
    };
    Ok(BreakpointSpec {
        file,
        real_file,
        line,
        column,
        condition: text("condition")?,
        log_message: text("logMessage")?,
        hit_count: match bp.integer("hitCount", 1, u64::from(u32::MAX), Some(1))? {
            1 => None,
            count => Some(count),
        },
    })
}
