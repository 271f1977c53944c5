//! Moving the program: `debug-continue` (which steps and pauses too), and the watch
//! expressions shown at every stop (`debug-watch`). Every call that waits has a deadline and
//! returns a state (`paused`, `running` or `exited`) rather than hanging.

use std::time::Duration;

use serde_json::json;

use crate::debugger::model::Action;
use crate::debugger::session::{Command, Reply};
use crate::tools::breakpoints::{
    breakpoint_properties, breakpoint_spec, pause_on_exceptions, pause_on_exceptions_schema,
};
use crate::tools::{
    answer, any_object, ask, one_of, session_cwd, session_id, timeout, timeout_arg, Args, Call,
    Tool,
};

pub(crate) const TOOLS: &[Tool] = &[
    Tool {
        name: "debug-continue",
        title: "Continue, step or pause",
        description: "Resumes and answers the next stop, or `exited`, or `running` once \
            `timeout` passes. `step` steps instead, `to` runs to a line, `pause: true` stops a \
            running program.",
        properties: || {
            json!({"sessionId": session_id(), "timeout": timeout(),
                   "step": {"type": "string", "enum": ["over", "into", "out"]},
                   "to": {"type": "object", "properties": to_properties(), "required": ["file", "line"]},
                   "pause": {"type": "boolean"}})
        },
        required: &[],
        read_only: false,
        output: any_object,
        run: |args, call| {
            one_of(args, &["step", "to", "pause"])?;
            if args.boolean("pause", false)? {
                return answer(resume(args, call, Action::Pause));
            }
            match args.optional_string("step")? {
                Some(_) => answer(step(args, call, "step")),
                None => answer(resume(args, call, Action::Continue)),
            }
        },
    },
    Tool {
        name: "debug-watch",
        title: "Watch expressions",
        description: "Adds or removes expressions evaluated at every stop (the stop's `watch`); \
            answers the list.",
        properties: || {
            json!({"sessionId": session_id(),
                   "add": {"type": "array", "items": {"type": "string"}},
                   "remove": {"type": "array", "items": {"type": "string"}}})
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
];

/// Former names, still answered: `debug-continue` with `step` or `pause`, and
/// `debug-breakpoint` with `exceptions`.
pub(crate) const FORMER: &[Tool] = &[
    Tool {
        name: "debug-step",
        title: "Step over, into or out",
        description: "Former name of debug-continue with `step`.",
        properties: || {
            json!({"sessionId": session_id(), "timeout": timeout(),
                   "kind": {"type": "string", "enum": ["over", "into", "out"]}})
        },
        required: &["kind"],
        read_only: false,
        output: any_object,
        run: |args, call| answer(step(args, call, "kind")),
    },
    Tool {
        name: "debug-pause",
        title: "Pause the running program",
        description: "Former name of debug-continue with `pause: true`.",
        properties: || json!({"sessionId": session_id(), "timeout": timeout()}),
        required: &[],
        read_only: false,
        output: any_object,
        run: |args, call| answer(resume(args, call, Action::Pause)),
    },
    Tool {
        name: "debug-pause-on-exceptions",
        title: "Pause on exceptions",
        description: "Former name of debug-breakpoint with `exceptions`.",
        properties: || {
            json!({"sessionId": session_id(),
                   "state": pause_on_exceptions_schema(),
                   "includeLibraries": {"type": "boolean"}})
        },
        required: &["state"],
        read_only: false,
        output: any_object,
        run: |args, call| answer(pause_on_exceptions(args, call, "state")),
    },
];

/// Steps the way `field` says (`over`, `into`, `out`).
fn step(args: &Args, call: &Call, field: &str) -> Reply {
    let action = match args.choice(field, &["over", "into", "out"], None)? {
        "over" => Action::StepOver,
        "into" => Action::StepInto,
        _ => Action::StepOut,
    };
    resume(args, call, action)
}

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
