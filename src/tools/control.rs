//! Moving the program: `debug-continue`, `debug-step`, `debug-pause`, and which exceptions
//! stop it (`debug-pause-on-exceptions`). Every call that waits has a deadline and returns a
//! state (`paused`, `running` or `exited`) rather than hanging.

use std::time::Duration;

use serde_json::json;

use crate::debugger::model::Action;
use crate::debugger::session::{Command, Reply};
use crate::tools::breakpoints::{breakpoint_properties, breakpoint_spec};
use crate::tools::{
    answer, any_object, ask, session_cwd, session_id, timeout, timeout_arg, Args, Call, Tool,
};

pub(crate) const TOOLS: &[Tool] = &[
    Tool {
        name: "debug-continue",
        title: "Continue to the next stop",
        description: "Resumes the program and returns the next stop (breakpoint, exception, \
            `debugger;`), or `exited` with the exit code, or `running` if `timeout` passes \
            first. With `to`, runs to that line (a one-shot breakpoint: reason `runTo`) unless \
            something stops it before.",
        properties: || {
            json!({"sessionId": session_id(), "timeout": timeout(),
                   "to": {"type": "object", "properties": to_properties(), "required": ["file", "line"],
                          "additionalProperties": false,
                          "description": "Run to this line: stop there once (or at anything that stops the program first)."}})
        },
        required: &[],
        read_only: false,
        output: any_object,
        run: |args, call| answer(resume(args, call, Action::Continue)),
    },
    Tool {
        name: "debug-step",
        title: "Step over, into or out",
        description: "Steps the paused program (`over` the current line, `into` a call, `out` \
            of the function) and returns where it stopped.",
        properties: || {
            json!({"sessionId": session_id(),
                   "kind": {"type": "string", "enum": ["over", "into", "out"]},
                   "timeout": timeout()})
        },
        required: &["kind"],
        read_only: false,
        output: any_object,
        run: |args, call| {
            let action = match args.choice("kind", &["over", "into", "out"], None)? {
                "over" => Action::StepOver,
                "into" => Action::StepInto,
                _ => Action::StepOut,
            };
            answer(resume(args, call, action))
        },
    },
    Tool {
        name: "debug-pause",
        title: "Pause the running program",
        description: "Stops a running program wherever it is and returns the stop state.",
        properties: || json!({"sessionId": session_id(), "timeout": timeout()}),
        required: &[],
        read_only: false,
        output: any_object,
        run: |args, call| answer(resume(args, call, Action::Pause)),
    },
    Tool {
        name: "debug-watch",
        title: "Watch expressions",
        description: "Adds or removes watch expressions: each is evaluated in the top frame at \
            every stop and shown in the stop state's `watch` as {expression, type, value}, like \
            a debugger's watch pane. Answers the list; with no arguments, just lists them.",
        properties: || {
            json!({"sessionId": session_id(),
                   "add": {"type": "array", "items": {"type": "string"}, "description": "Expressions to watch, in the program's language."},
                   "remove": {"type": "array", "items": {"type": "string"}, "description": "Expressions to stop watching."}})
        },
        required: &[],
        read_only: false,
        output: any_object,
        run: |args, call| {
            let add = args.strings("add")?;
            let remove = args.strings("remove")?;
            answer(ask(args, call, Duration::ZERO, |reply| Command::Watch { add, remove, reply }))
        },
    },
    Tool {
        name: "debug-pause-on-exceptions",
        title: "Pause on exceptions",
        description: "Chooses which exceptions stop the program: `none`, `uncaught`, or `all` \
            (caught too; those thrown and caught inside dependencies and the runtime's own code \
            only with includeLibraries). The stop says the exception's class, message, stack \
            and whether it is uncaught.",
        properties: || {
            json!({"sessionId": session_id(),
                   "state": {"type": "string", "enum": ["none", "uncaught", "all"]},
                   "includeLibraries": {"type": "boolean", "default": false,
                       "description": "With `all`, also stop for exceptions thrown and caught inside dependencies (node_modules, installed packages) and the runtime's own code."}})
        },
        required: &["state"],
        read_only: false,
        output: any_object,
        run: |args, call| {
            let state = args.choice("state", &["none", "uncaught", "all"], None)?.to_string();
            let include_libraries = args.boolean("includeLibraries", false)?;
            let set = |reply| Command::PauseOnExceptions { state, include_libraries, reply };
            answer(ask(args, call, Duration::ZERO, set))
        },
    },
];

fn to_properties() -> serde_json::Value {
    let mut properties = breakpoint_properties();
    if let Some(fields) = properties.as_object_mut() {
        fields.retain(|name, _| matches!(name.as_str(), "file" | "line" | "column"));
    }
    properties
}

fn resume(args: &Args, call: &Call, action: Action) -> Reply {
    let timeout = timeout_arg(args)?;
    let to = match args.has("to") {
        true => {
            let to = args.object("to")?;
            to.deny_unknown_in(&to_properties())?;
            let spec = breakpoint_spec(&to, session_cwd(args, call)?.as_deref());
            Some(spec.map_err(|f| f.or_with("field", "to".into()))?)
        }
        false => None,
    };
    ask(args, call, timeout, |reply| Command::Resume { action, timeout, to, reply })
}
