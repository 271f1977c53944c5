//! Looking around a stopped program: `debug-stack`, `debug-variables`, `debug-evaluate`,
//! `debug-set-variable`, and what it printed and loaded: `debug-output`, `debug-scripts`,
//! `debug-source`.

use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};

use crate::debugger::model::{VariablesQuery, VALUE_PREVIEW};
use crate::debugger::session::{Command, Reply};
use crate::debugger::{Code, Failure};
use crate::tools::{answer, any_object, ask, session_id, Args, Call, Tool};

pub(crate) const TOOLS: &[Tool] = &[
    Tool {
        name: "debug-stack",
        title: "Call stack",
        description: "The paused program's call stack, top first, in original source \
            coordinates.",
        properties: || {
            json!({"sessionId": session_id(),
                   "maxFrames": {"type": "integer", "minimum": 1, "maximum": 200, "default": 20},
                   "includeAsync": {"type": "boolean", "default": true, "description": "Also the awaiting callers (frames marked `async`; Node)."}})
        },
        required: &[],
        read_only: true,
        output: any_object,
        run: |args, call| {
            let max_frames = args.integer("maxFrames", 1, 200, Some(20))? as usize;
            let include_async = args.boolean("includeAsync", true)?;
            let stack = |reply| Command::Stack { max_frames, include_async, reply };
            answer(ask(args, call, Duration::ZERO, stack))
        },
    },
    Tool {
        name: "debug-threads",
        title: "Threads",
        description: "The program's threads, in every process debugged, and which one the stop \
            is in (`current`): the program's own (Node: `main`; Python: its thread ids), each \
            child process's (`pid`, or `pid/id`) and worker's (`pid/n`); `, paused` marks one \
            that stopped and waits its turn. With `select`, the stop as seen from that thread: \
            its location, locals, and the frames debug-stack, debug-variables, debug-evaluate \
            and debug-step then use.",
        properties: || {
            json!({"sessionId": session_id(),
                   "select": {"type": "string", "description": "A thread's `id` from the list: inspect and step that thread."}})
        },
        required: &[],
        read_only: false,
        output: any_object,
        run: |args, call| {
            let select = args.optional_string("select")?.map(String::from);
            answer(ask(args, call, Duration::ZERO, |reply| Command::Threads { select, reply }))
        },
    },
    Tool {
        name: "debug-variables",
        title: "Variables of a paused frame",
        description: "Lists the variables of a scope of a paused frame as {name, type, value, \
            expandable}, compact and capped; `path` (e.g. `order.items[2]`) lists the members \
            of that value instead, to open what was cut.",
        properties: || {
            json!({"sessionId": session_id(),
                   "frame": {"type": "integer", "minimum": 0, "default": 0},
                   "scope": {"type": "string", "enum": ["local", "closure", "module", "global", "registers", "all"], "default": "local", "description": "`registers`: a native frame's CPU registers (lldb-dap, gdb)."},
                   "path": {"type": "string", "description": "An expression whose members to list, e.g. `order.items[2]`; a Map's or Set's entries are `[0]`, `[1]`... (open one with `[...m][3]` or `m.get(key)`)."},
                   "start": {"type": "integer", "minimum": 0, "default": 0, "description": "The first member to list, to page through a long one."},
                   "maxChars": {"type": "integer", "minimum": 1, "maximum": MAX_MAX_CHARS, "default": VARIABLE_CHARS,
                                "description": "Characters of each value's preview at most; a cut one ends in `… [truncated]`."},
                   "maxItems": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 50}})
        },
        required: &[],
        read_only: true,
        output: any_object,
        run: |args, call| answer(variables(args, call)),
    },
    Tool {
        name: "debug-evaluate",
        title: "Evaluate an expression",
        description: "Evaluates an expression in the program's language in a paused frame \
            (locals and closures visible; `frame` 0 is the top) or, while a Node program runs, \
            in the global scope. Returns {type, value} as debug-script does; a thrown error \
            gives type `error`.",
        properties: || {
            json!({"sessionId": session_id(),
                   "expression": {"type": "string"},
                   "frame": {"type": "integer", "minimum": 0, "default": 0},
                   "maxChars": max_chars_schema()})
        },
        required: &["expression"],
        read_only: false,
        output: any_object,
        run: |args, call| {
            let expression = args.string("expression")?.to_string();
            let frame = args.integer("frame", 0, 10_000, Some(0))? as usize;
            let max_chars = args.integer("maxChars", 1, MAX_MAX_CHARS, Some(MAX_CHARS))? as usize;
            let evaluate = |reply| Command::Evaluate { expression, frame, max_chars, reply };
            answer(ask(args, call, Duration::ZERO, evaluate))
        },
    },
    Tool {
        name: "debug-set-variable",
        title: "Change a variable",
        description: "Sets a variable of a paused frame to the value of an expression in the \
            program's language and returns its new {type, value}.",
        properties: || {
            json!({"sessionId": session_id(),
                   "name": {"type": "string"},
                   "value": {"type": "string", "description": "An expression in the program's language, e.g. `42`, `{a: 1}` or `{'a': 1}`."},
                   "frame": {"type": "integer", "minimum": 0, "default": 0},
                   "scope": {"type": "string", "enum": ["local", "closure", "module", "global"], "default": "local"},
                   "maxChars": max_chars_schema()})
        },
        required: &["name", "value"],
        read_only: false,
        output: any_object,
        run: |args, call| {
            let name = args.string("name")?.to_string();
            let value = args.string("value")?.to_string();
            let frame = args.integer("frame", 0, 10_000, Some(0))? as usize;
            let scopes = ["local", "closure", "module", "global"];
            let scope = args.choice("scope", &scopes, Some("local"))?.to_string();
            let max_chars = args.integer("maxChars", 1, MAX_MAX_CHARS, Some(MAX_CHARS))? as usize;
            let set = |reply| Command::SetVariable { name, value, frame, scope, max_chars, reply };
            answer(ask(args, call, Duration::ZERO, set))
        },
    },
    Tool {
        name: "debug-output",
        title: "Program output",
        description: "The program's stdout and stderr, console messages and logpoint messages \
            since `since` (the `cursor` of the previous answer; omit it for everything kept).",
        properties: || {
            json!({"sessionId": session_id(), "since": {"type": "string"},
                   "stripAnsi": {"type": "boolean", "default": true,
                                 "description": "Leave out terminal colour codes; false gives the output as written."}})
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
        name: "debug-scripts",
        title: "Loaded scripts",
        description: "The scripts the program has loaded, with their source maps and the \
            original sources those list (Node's own `node:` scripts and Deno's `ext:` ones only with \
            includeInternal).",
        properties: || json!({"sessionId": session_id(), "includeInternal": {"type": "boolean", "default": false}}),
        required: &[],
        read_only: true,
        output: any_object,
        run: |args, call| {
            let include_internal = args.boolean("includeInternal", false)?;
            let scripts = |reply| Command::Scripts { include_internal, reply };
            answer(ask(args, call, Duration::ZERO, scripts))
        },
    },
    Tool {
        name: "debug-source",
        title: "Show source lines",
        description: "Lines of a file with their numbers: `context` lines around `line`, or the \
            start of the file. Works for files on disk (original sources included) and for \
            scripts the program compiled in memory.",
        properties: || {
            json!({"sessionId": session_id(), "file": {"type": "string"},
                   "line": {"type": "integer", "minimum": 1},
                   "context": {"type": "integer", "minimum": 0, "maximum": 200, "default": 5}})
        },
        required: &["file"],
        read_only: true,
        output: any_object,
        run: |args, call| answer(source(args, call)),
    },
];

/// Characters of a value's JSON in an answer, unless `maxChars` says otherwise: enough to
/// read, small enough for a context window.
const MAX_CHARS: u64 = 4096;
const MAX_MAX_CHARS: u64 = 1_000_000;
/// Characters of each value `debug-variables` lists, unless `maxChars` says otherwise: a list
/// stays short.
const VARIABLE_CHARS: u64 = VALUE_PREVIEW as u64;

fn max_chars_schema() -> Value {
    json!({"type": "integer", "minimum": 1, "maximum": MAX_MAX_CHARS, "default": MAX_CHARS,
           "description": "Characters of the value's JSON at most; a cut value says `truncated` and how to see more."})
}

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
