//! `debug-set-breakpoint`, `debug-remove-breakpoint`, `debug-list-breakpoints`, and the
//! breakpoint fields `debug-launch` and `debug-attach` take too.

use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};

use crate::debugger::model::BreakpointSpec;
use crate::debugger::session::Command;
use crate::debugger::Failure;
use crate::tools::script::check_file;
use crate::tools::{
    answer, any_object, ask, in_dir, session_cwd, session_id, with_session, ArgError, Args, Tool,
};

pub(crate) const TOOLS: &[Tool] = &[
    Tool {
        name: "debug-set-breakpoint",
        title: "Set a breakpoint or a watchpoint",
        description: "Sets a breakpoint (or, with `logMessage`, a logpoint) in a running or \
            paused session. A breakpoint in a script not loaded yet binds when it loads; \
            `verified` and `resolved` say whether and where it is bound. With `data` instead of \
            `file` and `line`, a watchpoint: the program stops whenever what `data` names (a \
            variable or field of the paused frame, e.g. `total` or `order->total`) is written \
            (`access`: `write`, or `read`, `readWrite`), and the stop says the old and new value \
            under `watchpoints`. Watchpoints need a paused program and an adapter with data \
            breakpoints (lldb-dap: C, C++, Rust).",
        properties: || {
            let mut properties = with_session(breakpoint_properties());
            properties["data"] = json!({"type": "string", "description": "A watchpoint on this variable or field of the paused top frame (instead of file and line)."});
            properties["access"] = json!({"type": "string", "enum": ["write", "read", "readWrite"], "default": "write"});
            properties
        },
        required: &[],
        read_only: false,
        output: any_object,
        run: |args, call| {
            if let Some(expression) = args.optional_string("data")? {
                for field in ["file", "line", "column", "condition", "logMessage"] {
                    if args.has(field) {
                        return Err(ArgError {
                            field: field.into(),
                            problem:
                                "a watchpoint (`data`) takes no file, line, condition or logMessage"
                                    .into(),
                        }
                        .into());
                    }
                }
                let expression = expression.to_string();
                let access =
                    args.choice("access", &["write", "read", "readWrite"], Some("write"))?;
                let access = access.to_string();
                let set = |reply| Command::SetWatchpoint { expression, access, reply };
                return answer(ask(args, call, Duration::ZERO, set));
            }
            if !args.has("file") || !args.has("line") {
                let field = if args.has("file") { "line" } else { "file" };
                return Err(ArgError {
                    field: field.into(),
                    problem: "give `file` and `line` for a breakpoint, or `data` for a watchpoint"
                        .into(),
                }
                .into());
            }
            let spec = breakpoint_spec(args, session_cwd(args, call)?.as_deref())?;
            answer(ask(args, call, Duration::ZERO, |reply| Command::SetBreakpoint { spec, reply }))
        },
    },
    Tool {
        name: "debug-remove-breakpoint",
        title: "Remove a breakpoint",
        description: "Removes a breakpoint by the `breakpointId` debug-set-breakpoint or \
            debug-list-breakpoints gave.",
        properties: || json!({"sessionId": session_id(), "breakpointId": {"type": "string"}}),
        required: &["breakpointId"],
        read_only: false,
        output: any_object,
        run: |args, call| {
            let id = args.string("breakpointId")?.to_string();
            answer(ask(args, call, Duration::ZERO, |reply| Command::RemoveBreakpoint { id, reply }))
        },
    },
    Tool {
        name: "debug-list-breakpoints",
        title: "List breakpoints",
        description: "Every breakpoint of the session: requested and resolved locations, \
            condition, logMessage, hit count, and why one has not bound.",
        properties: || json!({"sessionId": session_id()}),
        required: &[],
        read_only: true,
        output: any_object,
        run: |args, call| {
            answer(ask(args, call, Duration::ZERO, |reply| Command::ListBreakpoints { reply }))
        },
    },
];

/// The fields of one breakpoint.
pub(crate) fn breakpoint_properties() -> Value {
    json!({
        "file": {"type": "string", "description": "Absolute or relative to the server's working directory; an original source (.ts) works through source maps."},
        "line": {"type": "integer", "minimum": 1},
        "column": {"type": "integer", "minimum": 1},
        "condition": {"type": "string", "description": "An expression in the program's language; stop only when truthy."},
        "logMessage": {"type": "string", "description": "A logpoint: log this (with {expression} parts) to debug-output instead of stopping."}
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
    let (file, real_file) = match crate::tools::page::served_path(file, cwd) {
        // A page's source named by its URL: not on disk, perhaps only in a map.
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
    })
}
