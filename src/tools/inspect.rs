//! Looking around a stopped program: `debug-stack` (and its threads), `debug-variables`,
//! `debug-evaluate` (which sets variables too), and what it printed and loaded:
//! `debug-output`, `debug-source`.

use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};

use crate::debugger::limits::VALUE_PREVIEW;
use crate::debugger::model::VariablesQuery;
use crate::debugger::session::{Command, Reply};
use crate::debugger::{Code, Failure};
use crate::tools::{answer, any_object, ask, session_id, ArgError, Args, Call, Tool};

pub(crate) const TOOLS: &[Tool] = &[
    Tool {
        name: "debug-stack",
        title: "Call stack and threads",
        description: "The stopped thread's call stack, top first, in the source's own lines, \
            and the program's `threads` if several; `thread` switches to another thread's \
            stop, which the other tools then inspect and step.",
        properties: || {
            json!({"sessionId": session_id(),
                   "maxFrames": {"type": "integer", "minimum": 1, "maximum": 200},
                   "includeAsync": {"type": "boolean", "description": "awaiting callers too (default true)"},
                   "thread": {"type": "string"}})
        },
        required: &[],
        read_only: false,
        output: any_object,
        run: |args, call| answer(stack(args, call)),
    },
    Tool {
        name: "debug-variables",
        title: "Variables of a paused frame",
        description: "A paused frame's variables as {name, type, value, expandable}, values cut \
            short; `path` (`order.items[2]`) lists that value's members, to open what was cut.",
        properties: || {
            json!({"sessionId": session_id(),
                   "frame": {"type": "integer", "minimum": 0},
                   "scope": {"type": "string", "enum": ["local", "closure", "module", "global", "registers", "all"]},
                   "path": {"type": "string"},
                   "start": {"type": "integer", "minimum": 0, "description": "first member, to page"},
                   "maxChars": {"type": "integer", "minimum": 1, "maximum": MAX_MAX_CHARS},
                   "maxItems": {"type": "integer", "minimum": 1, "maximum": 1000}})
        },
        required: &[],
        read_only: true,
        output: any_object,
        run: |args, call| answer(variables(args, call)),
    },
    Tool {
        name: "debug-evaluate",
        title: "Evaluate an expression, or set a variable",
        description: "Evaluates `expression` in a paused frame (locals visible; `frame` 0 is the \
            top) and answers {type, value}, type `error` when it throws. With `set`, assigns \
            its value to that variable.",
        properties: || {
            json!({"sessionId": session_id(),
                   "expression": {"type": "string"},
                   "frame": {"type": "integer", "minimum": 0},
                   "set": {"type": "string", "description": "a variable's name (JVM: also `o.field`, `a[i]`)"},
                   "scope": {"type": "string", "enum": ["local", "closure", "module", "global"], "description": "with set"},
                   "maxChars": {"type": "integer", "minimum": 1, "maximum": MAX_MAX_CHARS}})
        },
        required: &["expression"],
        read_only: false,
        output: any_object,
        run: |args, call| match args.has("set") {
            true => answer(set_variable(args, call, "set", "expression")),
            false => {
                if args.has("scope") {
                    return Err(ArgError::new("scope", "only with `set`").into());
                }
                answer(evaluate(args, call))
            }
        },
    },
    Tool {
        name: "debug-output",
        title: "Program output",
        description: "The program's stdout, stderr, console and logpoint messages since \
            `since` (the last answer's `cursor`).",
        properties: || {
            json!({"sessionId": session_id(), "since": {"type": "string"},
                   "stripAnsi": {"type": "boolean", "description": "default true"}})
        },
        required: &[],
        read_only: true,
        output: any_object,
        run: |args, call| {
            let since = args.optional_string("since")?.map(String::from);
            let strip_ansi = args.boolean("stripAnsi", true)?;
            let output = |reply| Command::Output { since, strip_ansi, reply };
            answer(ask(args, call, Duration::ZERO, output))
        },
    },
    Tool {
        name: "debug-source",
        title: "Source lines and loaded scripts",
        description: "Numbered lines of `file` around `line` (sources through their maps, code \
            compiled in memory); without `file`, the scripts the program loaded.",
        properties: || {
            json!({"sessionId": session_id(), "file": {"type": "string"},
                   "line": {"type": "integer", "minimum": 1},
                   "context": {"type": "integer", "minimum": 0, "maximum": 200},
                   "includeInternal": {"type": "boolean", "description": "without file: the runtime's own scripts too"}})
        },
        required: &[],
        read_only: true,
        output: any_object,
        run: |args, call| match args.has("file") {
            true => {
                if args.has("includeInternal") {
                    return Err(ArgError::new("includeInternal", "only without `file`").into());
                }
                answer(source(args, call))
            }
            false => {
                for field in ["line", "context"] {
                    if args.has(field) {
                        return Err(ArgError::new(field, "only with `file`").into());
                    }
                }
                answer(scripts(args, call))
            }
        },
    },
];

/// Former names, still answered: `debug-stack` with `thread`, `debug-evaluate` with `set`,
/// `debug-source` without `file`.
pub(crate) const FORMER: &[Tool] = &[
    Tool {
        name: "debug-threads",
        title: "Threads",
        description: "Former name of debug-stack with `thread`.",
        properties: || json!({"sessionId": session_id(), "select": {"type": "string"}}),
        required: &[],
        read_only: false,
        output: any_object,
        run: |args, call| answer(select_thread(args, call, "select")),
    },
    Tool {
        name: "debug-set-variable",
        title: "Change a variable",
        description: "Former name of debug-evaluate with `set`.",
        properties: || {
            json!({"sessionId": session_id(), "name": {"type": "string"},
                   "value": {"type": "string"}, "frame": {"type": "integer"},
                   "scope": {"type": "string"}, "maxChars": {"type": "integer"}})
        },
        required: &["name", "value"],
        read_only: false,
        output: any_object,
        run: |args, call| answer(set_variable(args, call, "name", "value")),
    },
    Tool {
        name: "debug-scripts",
        title: "Loaded scripts",
        description: "Former name of debug-source without `file`.",
        properties: || json!({"sessionId": session_id(), "includeInternal": {"type": "boolean"}}),
        required: &[],
        read_only: true,
        output: any_object,
        run: |args, call| answer(scripts(args, call)),
    },
];

/// The stack of the stop shown (after switching to `thread`'s), with the threads when the
/// program has several.
fn stack(args: &Args, call: &Call) -> Reply {
    let max_frames = args.integer("maxFrames", 1, 200, Some(20))? as usize;
    let include_async = args.boolean("includeAsync", true)?;
    if args.has("thread") {
        select_thread(args, call, "thread")?;
    }
    let mut stack = ask(args, call, Duration::ZERO, |reply| Command::Stack {
        max_frames,
        include_async,
        reply,
    })?;
    let threads =
        ask(args, call, Duration::ZERO, |reply| Command::Threads { select: None, reply })?;
    if threads["threads"].as_array().is_some_and(|threads| threads.len() > 1) {
        stack["threads"] = threads["threads"].clone();
    }
    Ok(stack)
}

/// The threads, and with the thread `field` names, the stop as seen from it (a thread that
/// does not exist is `field`'s fault).
fn select_thread(args: &Args, call: &Call, field: &str) -> Reply {
    let select = args.optional_string(field)?.map(String::from);
    ask(args, call, Duration::ZERO, |reply| Command::Threads { select, reply }).map_err(|failure| {
        match failure {
            Failure::Error { code: Code::InvalidArguments, .. } => {
                failure.or_with("field", field.into())
            }
            other => other,
        }
    })
}

fn evaluate(args: &Args, call: &Call) -> Reply {
    let expression = args.string("expression")?.to_string();
    let frame = args.integer("frame", 0, 10_000, Some(0))? as usize;
    let max_chars = args.integer("maxChars", 1, MAX_MAX_CHARS, Some(MAX_CHARS))? as usize;
    let evaluate = |reply| Command::Evaluate { expression, frame, max_chars, reply };
    ask(args, call, Duration::ZERO, evaluate)
}

/// Sets the variable `name_field` names to the value of the expression `value_field` holds.
fn set_variable(args: &Args, call: &Call, name_field: &str, value_field: &str) -> Reply {
    let name = args.string(name_field)?.to_string();
    let value = args.string(value_field)?.to_string();
    let frame = args.integer("frame", 0, 10_000, Some(0))? as usize;
    let scopes = ["local", "closure", "module", "global"];
    let scope = args.choice("scope", &scopes, Some("local"))?.to_string();
    let max_chars = args.integer("maxChars", 1, MAX_MAX_CHARS, Some(MAX_CHARS))? as usize;
    let set = |reply| Command::SetVariable { name, value, frame, scope, max_chars, reply };
    ask(args, call, Duration::ZERO, set)
}

fn scripts(args: &Args, call: &Call) -> Reply {
    let include_internal = args.boolean("includeInternal", false)?;
    ask(args, call, Duration::ZERO, |reply| Command::Scripts { include_internal, reply })
}

/// Characters of a value's JSON in an answer, unless `maxChars` says otherwise: enough to
/// read, small enough for a context window.
const MAX_CHARS: u64 = 4096;
const MAX_MAX_CHARS: u64 = 1_000_000;
/// Characters of each value `debug-variables` lists, unless `maxChars` says otherwise: a list
/// stays short.
const VARIABLE_CHARS: u64 = VALUE_PREVIEW as u64;

fn variables(args: &Args, call: &Call) -> Reply {
    let scopes = ["local", "closure", "module", "global", "registers", "all"];
    let query = VariablesQuery {
        frame: args.integer("frame", 0, 10_000, Some(0))? as usize,
        scope: args.choice("scope", &scopes, Some("local"))?.to_string(),
        path: args.optional_string("path")?.filter(|p| !p.trim().is_empty()).map(String::from),
        start: args.integer("start", 0, u64::from(u32::MAX), Some(0))? as usize,
        max_chars: args.integer("maxChars", 1, MAX_MAX_CHARS, Some(VARIABLE_CHARS))? as usize,
        max_items: args.integer("maxItems", 1, 1000, Some(50))? as usize,
    };
    ask(args, call, Duration::ZERO, |reply| Command::Variables { query, reply })
}

/// Lines of shown at most without a `line`.
const SOURCE_HEAD: usize = 200;

fn source(args: &Args, call: &Call) -> Reply {
    let file = args.string("file")?;
    let line = args.integer("line", 1, u64::from(u32::MAX), Some(0))? as usize;
    let context = args.integer("context", 0, 200, Some(5))? as usize;
    // A file of an attached program's that is not here (`remote:/…`) is the program's to show.
    let mut path = match crate::debugger::paths::unmarked(file) {
        Some(_) => Path::new(file).to_path_buf(),
        None => {
            std::path::absolute(Path::new(file)).unwrap_or_else(|_| Path::new(file).to_path_buf())
        }
    };
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
            let file = path.display().to_string();
            let answer =
                ask(args, call, Duration::ZERO, |reply| Command::ScriptSource { file, reply })?;
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
            // A minified bundle's line is a whole program: cut as a stop's source lines are.
            let mut entry = json!({"line": i + 1, "text": crate::debugger::limits::clip(t, 500)});
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
