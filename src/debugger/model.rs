//! The typed model every runtime answers in: where a program stopped ([`Stop`], [`Location`],
//! [`Frame`]), what its variables hold ([`Variable`]), where a breakpoint landed
//! ([`Resolution`]), and what a tool asks of a session ([`BreakpointSpec`], [`Action`],
//! [`VariablesQuery`]). Backends fill these in; `session.rs` turns them into the answers'
//! JSON, in one place, so that every runtime's answers have one shape.

use std::path::PathBuf;

use serde_json::{json, Value};

use crate::debugger::Failure;

/// A breakpoint as `debug-launch` and `debug-set-breakpoint` take it.
#[derive(Clone, Debug)]
pub(crate) struct BreakpointSpec {
    /// The file as the caller named it (shown in answers).
    pub(crate) file: PathBuf,
    /// The same file with its symbolic links resolved (what runtimes load).
    pub(crate) real_file: PathBuf,
    pub(crate) line: u32,
    pub(crate) column: Option<u32>,
    pub(crate) condition: Option<String>,
    /// A logpoint: `{expr}` parts are evaluated; the program does not stop.
    pub(crate) log_message: Option<String>,
    /// Stops (or logs) from this hit on; the hits before it (those whose condition held) are
    /// counted and passed over by the session, alike for every runtime.
    pub(crate) hit_count: Option<u64>,
}

/// What a waiting call tells the program to do.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Action {
    Continue,
    StepOver,
    StepInto,
    StepOut,
    Pause,
}

/// What `debug-variables` asks for.
pub(crate) struct VariablesQuery {
    pub(crate) frame: usize,
    /// `local`, `closure`, `module`, `global` or `all`.
    pub(crate) scope: String,
    /// An expression to expand (`order.items[2]`) instead of a scope.
    pub(crate) path: Option<String>,
    /// The first item shown (paging through a long list).
    pub(crate) start: usize,
    pub(crate) max_items: usize,
    /// Characters of each value at most.
    pub(crate) max_chars: usize,
}

/// A place in the program's source: the original file when a source map says so (then
/// `generated` is where that is in the file that runs).
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Location {
    pub(crate) function: String,
    /// `None` when the runtime cannot say (a Python frame in compiled code, say).
    pub(crate) file: Option<String>,
    /// 1-based.
    pub(crate) line: u64,
    /// 1-based; `None` when the runtime knows lines only.
    pub(crate) column: Option<u64>,
    /// `{file, line, column}` in the generated file, for a source-mapped location.
    pub(crate) generated: Option<Value>,
}

impl Location {
    pub(crate) fn to_json(&self) -> Value {
        let mut json = json!({"function": self.function, "file": self.file, "line": self.line,
                              "column": self.column});
        if let Some(generated) = &self.generated {
            json["generated"] = generated.clone();
        }
        json
    }
}

/// A stack frame: its place and, for an awaited caller, why it continues (`await`).
pub(crate) struct Frame {
    pub(crate) location: Location,
    pub(crate) async_reason: Option<String>,
}

/// A name and its value, compact: what `locals` and `debug-variables` list.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Variable {
    pub(crate) name: String,
    pub(crate) kind: String,
    pub(crate) value: Value,
    /// Whether `path` can expand it.
    pub(crate) expandable: bool,
    /// The scope it was found in (`local`, `block`, `closure`, `global`...), when listed from
    /// scopes.
    pub(crate) scope: Option<String>,
}

impl Variable {
    /// The variables from `start`, at most `max`, then how many more.
    pub(crate) fn page(all: Vec<Variable>, start: usize, max: usize) -> Vec<Variable> {
        let total = all.len();
        let mut items: Vec<Variable> = all.into_iter().skip(start).take(max).collect();
        let shown = start.saturating_add(items.len());
        if total > shown {
            items.push(Variable::more(total - shown, shown));
        }
        items
    }

    /// The last item of a capped list: how many more there are (after the first `next`
    /// items) and how to see them.
    fn more(count: usize, next: usize) -> Variable {
        Variable {
            name: "…".into(),
            kind: "truncated".into(),
            value: format!(
                "{count} more: raise maxItems, page on with start: {next}, or narrow with path"
            )
            .into(),
            expandable: false,
            scope: None,
        }
    }

    /// `{name, type, value}`, with `expandable` (and `scope` when known) for `debug-variables`;
    /// a text value cut at `max_chars`.
    pub(crate) fn to_json(&self, detailed: bool, max_chars: usize) -> Value {
        let value = match &self.value {
            Value::String(text) => crate::debugger::limits::clip(text, max_chars).into(),
            other => other.clone(),
        };
        let mut json = json!({"name": self.name, "type": self.kind, "value": value});
        if detailed {
            json["expandable"] = self.expandable.into();
            if let Some(scope) = &self.scope {
                json["scope"] = scope.as_str().into();
            }
        }
        json
    }
}

/// Where a breakpoint landed, as far as the runtime knows now.
#[derive(Clone, Debug, Default)]
pub(crate) struct Resolution {
    /// `{file, line, column}` of each place it is bound (empty: not bound).
    pub(crate) resolved: Vec<Value>,
    /// Where in the generated files, for a source-mapped breakpoint.
    pub(crate) generated: Vec<Value>,
    /// Why it is not bound, in the runtime's words.
    pub(crate) reason: Option<String>,
}

/// An exception the program stopped for.
pub(crate) struct Exception {
    pub(crate) class: Value,
    pub(crate) message: Value,
    /// Its traceback, innermost first, when the runtime gives one.
    pub(crate) stack: Vec<TraceFrame>,
    pub(crate) uncaught: bool,
    /// It left the program's own code into a library's (`pauseOnExceptions: userUnhandled`).
    pub(crate) user_unhandled: bool,
}

/// One frame of an exception's traceback.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct TraceFrame {
    pub(crate) function: String,
    /// A path, or what the runtime names code that has none (`node:internal/…`).
    pub(crate) file: String,
    pub(crate) line: Option<u32>,
    /// A library's or the runtime's own code, not the program's.
    pub(crate) library: bool,
}

/// How many of the program's own frames an exception's stack shows.
const TRACE_FRAMES: usize = 8;

/// An exception's stack as every answer shows it, whatever the runtime: the program's own
/// frames first, innermost first, at most [`TRACE_FRAMES`] (`at add (/p/app.py:12)`); then how
/// many frames were left out, the libraries' and the runtime's counted, not printed (a test
/// runner's forty frames would otherwise bury the program's two). `null` without a traceback.
pub(crate) fn trace_text(frames: &[TraceFrame]) -> Value {
    if frames.is_empty() {
        return Value::Null;
    }
    let own: Vec<&TraceFrame> = frames.iter().filter(|f| !f.library).collect();
    let mut lines: Vec<String> = own
        .iter()
        .take(TRACE_FRAMES)
        .map(|f| match f.line {
            Some(line) => format!("at {} ({}:{line})", f.function, f.file),
            None => format!("at {} ({})", f.function, f.file),
        })
        .collect();
    let more = own.len().saturating_sub(TRACE_FRAMES);
    let libraries = frames.len() - own.len();
    let left_out = match (more, libraries) {
        (0, 0) => None,
        (0, n) => Some(format!("… {n} frame{} in libraries and the runtime", plural(n))),
        (m, 0) => Some(format!("… {m} more frame{}", plural(m))),
        (m, n) => {
            Some(format!("… {m} more frame{} and {n} in libraries and the runtime", plural(m)))
        }
    };
    lines.extend(left_out);
    lines.join("\n").into()
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// Why the program stopped, when the runtime knows better than "what it was last told".
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Reason {
    Breakpoint,
    Exception,
    Entry,
    Pause,
    Step,
    /// A watchpoint (data breakpoint): what it watches was accessed.
    Watchpoint,
    /// Nothing said: the actor names it after the last [`Action`].
    Unsaid,
}

/// A stop, as a backend reports it: `paused` is what the backend keeps to read the stopped
/// program's frames and values.
pub(crate) struct Stop<P> {
    pub(crate) reason: Reason,
    /// The session's breakpoint ids that this stop is at.
    pub(crate) hits: Vec<String>,
    pub(crate) location: Location,
    pub(crate) exception: Option<Exception>,
    /// How many frames the stopped thread has (frame indices run below it).
    pub(crate) frames: usize,
    pub(crate) paused: P,
}

/// A thread of the program, for `debug-threads`.
pub(crate) struct Thread {
    pub(crate) id: String,
    pub(crate) name: String,
}

/// A loaded script or module, for `debug-scripts`.
pub(crate) struct Source {
    pub(crate) file: String,
    pub(crate) url: String,
    /// `inline` or the map's URL, and the files the map lists.
    pub(crate) source_map: Option<(String, Vec<String>)>,
}

impl Source {
    pub(crate) fn to_json(&self) -> Value {
        let mut json = json!({"file": self.file, "url": self.url});
        if let Some((map, sources)) = &self.source_map {
            json["sourceMap"] = map.as_str().into();
            json["originalSources"] = sources.clone().into();
        }
        json
    }
}

/// A piece of a logpoint's message: literal text, or an `{expression}` to evaluate.
#[derive(Debug, PartialEq)]
pub(crate) enum Part<'a> {
    Text(&'a str),
    Expression(&'a str),
}

/// Splits a logpoint message into text and `{expression}` parts. Braces nest (`{ {a: 1}.a }`);
/// `{{` and `}}` are literal braces; an unclosed `{` is text.
pub(crate) fn logpoint_parts(message: &str) -> Vec<Part<'_>> {
    let mut parts = Vec::new();
    let mut text_start = 0;
    let mut i = 0;
    let bytes = message.as_bytes();
    while i < bytes.len() {
        match bytes[i] {
            b'{' if bytes.get(i + 1) == Some(&b'{') => {
                parts.push(Part::Text(&message[text_start..=i]));
                i += 2;
                text_start = i;
            }
            b'}' if bytes.get(i + 1) == Some(&b'}') => {
                parts.push(Part::Text(&message[text_start..=i]));
                i += 2;
                text_start = i;
            }
            b'{' => {
                let mut depth = 0;
                let end = (i..bytes.len()).find(|&j| {
                    match bytes[j] {
                        b'{' => depth += 1,
                        b'}' => depth -= 1,
                        _ => {}
                    }
                    depth == 0
                });
                let Some(end) = end else { break };
                parts.push(Part::Text(&message[text_start..i]));
                parts.push(Part::Expression(&message[i + 1..end]));
                i = end + 1;
                text_start = i;
            }
            _ => i += 1,
        }
    }
    parts.push(Part::Text(&message[text_start..]));
    parts.retain(|p| *p != Part::Text(""));
    parts
}

/// What `debug-launch` starts.
pub(crate) struct LaunchSpec {
    pub(crate) command: crate::shell::CommandLine,
    pub(crate) breakpoints: Vec<BreakpointSpec>,
    pub(crate) stop_on_entry: bool,
    pub(crate) pause_on_exceptions: String,
    pub(crate) timeout: std::time::Duration,
}

/// What `debug-attach` sets up before it lets the program go on.
pub(crate) struct AttachSpec {
    pub(crate) breakpoints: Vec<BreakpointSpec>,
    /// Where relative breakpoint paths resolve.
    pub(crate) cwd: Option<std::path::PathBuf>,
    pub(crate) pause_on_exceptions: String,
    /// How long the first answer waits for a stop.
    pub(crate) timeout: std::time::Duration,
    /// Where the program's files are on this machine (`local`) for where it runs them
    /// (`remote`): a program in a container, or run from a copy.
    pub(crate) path_mappings: Vec<PathMapping>,
}

/// A folder of the program's (`remote`, as the program names its files) and the same folder
/// here (`local`, absolute).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct PathMapping {
    pub(crate) remote: String,
    pub(crate) local: std::path::PathBuf,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exception_stacks_show_the_programs_frames_first_and_count_the_rest() {
        let frame = |function: &str, library: bool| TraceFrame {
            function: function.into(),
            file: if library { "/lib/runner.py".into() } else { "/p/app.py".into() },
            line: Some(3),
            library,
        };
        let check = |frames: Vec<TraceFrame>, expected: &str| {
            assert_eq!(trace_text(&frames), Value::from(expected), "{frames:?}");
        };
        assert_eq!(trace_text(&[]), Value::Null);
        check(vec![frame("f", false)], "at f (/p/app.py:3)");
        // A test runner's frames between the program's: the program's first, theirs counted.
        let mut frames = vec![frame("check", false)];
        frames.extend((0..40).map(|i| frame(&format!("run{i}"), true)));
        frames.push(frame("test_x", false));
        check(
            frames,
            "at check (/p/app.py:3)\nat test_x (/p/app.py:3)\n… 40 frames in libraries and the runtime",
        );
        // Deep recursion in the program: capped at 8.
        let frames: Vec<TraceFrame> = (0..12).map(|_| frame("r", false)).collect();
        let expected = format!("{}\n… 4 more frames", ["at r (/p/app.py:3)"; 8].join("\n"));
        check(frames, &expected);
        let mut frames: Vec<TraceFrame> = (0..9).map(|_| frame("r", false)).collect();
        frames.push(TraceFrame { line: None, ..frame("native", true) });
        let expected = format!(
            "{}\n… 1 more frame and 1 in libraries and the runtime",
            ["at r (/p/app.py:3)"; 8].join("\n")
        );
        check(frames, &expected);
    }

    #[test]
    fn logpoint_messages_split_into_text_and_expressions() {
        use Part::{Expression as E, Text as T};
        assert_eq!(logpoint_parts("x={x} y={y}"), [T("x="), E("x"), T(" y="), E("y")]);
        assert_eq!(logpoint_parts("{ {a: 1}.a }!"), [E(" {a: 1}.a "), T("!")]);
        assert_eq!(logpoint_parts("{{literal}} {v!r}"), [T("{"), T("literal}"), T(" "), E("v!r")]);
        assert_eq!(logpoint_parts("open {x"), [T("open {x")]);
        assert_eq!(logpoint_parts("plain"), [T("plain")]);
    }
}

/// What the program ran where breakpoints do not reach: child processes (as far as they were
/// seen) that could not be followed, and worker threads.
#[derive(Debug, Default)]
pub(crate) struct Undebugged {
    pub(crate) processes: Vec<crate::process::Descendant>,
    pub(crate) workers: usize,
}

impl Undebugged {
    /// What the program `debuggee` ran that was not debugged: its processes but those
    /// `followed`; no workers.
    pub(crate) fn of(debuggee: &crate::process::Debuggee, followed: &[u32]) -> Undebugged {
        let descendants = debuggee.descendants(None);
        Undebugged { processes: Undebugged::processes(descendants, followed), workers: 0 }
    }

    /// The processes a program ran that were not debugged: its `descendants` less those
    /// `followed`, and less a shell that only started a followed one (npm's `sh -c 'greet'`).
    pub(crate) fn processes(
        descendants: Vec<crate::process::Descendant>,
        followed: &[u32],
    ) -> Vec<crate::process::Descendant> {
        let launchers: Vec<u32> = descendants
            .iter()
            .filter(|d| followed.contains(&d.process.pid))
            .map(|d| d.parent)
            .collect();
        let undebugged = |d: &crate::process::Descendant| {
            let launcher = launchers.contains(&d.process.pid) && crate::shell::is_shell(&d.command);
            !launcher && !followed.contains(&d.process.pid)
        };
        descendants.into_iter().filter(undebugged).collect()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.processes.is_empty() && self.workers == 0
    }

    /// `{processes: [{pid, command}], workers}`.
    pub(crate) fn to_json(&self) -> Value {
        let processes: Vec<Value> = self
            .processes
            .iter()
            .map(|d| json!({"pid": d.process.pid, "command": command_label(d)}))
            .collect();
        json!({"processes": processes, "workers": self.workers})
    }

    /// "3 child processes (pid 12: node t.js, …) and 1 worker thread", or `None`.
    pub(crate) fn describe(&self) -> Option<String> {
        let plural =
            |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
        let mut parts = Vec::new();
        if !self.processes.is_empty() {
            let named: Vec<String> = self
                .processes
                .iter()
                .take(3)
                .map(|d| format!("pid {}: {}", d.process.pid, command_label(d)))
                .collect();
            let more = if self.processes.len() > 3 { ", …" } else { "" };
            let n = self.processes.len();
            let what = plural(n, "child process", "child processes");
            parts.push(format!("{what} ({}{more})", named.join("; ")));
        }
        if self.workers > 0 {
            parts.push(plural(self.workers, "worker thread", "worker threads"));
        }
        (!parts.is_empty()).then(|| parts.join(" and "))
    }

    /// The note for an answer: what ran undebugged.
    pub(crate) fn note(&self) -> Option<String> {
        self.describe().map(|what| {
            format!(
                "Note: code run in {what} was not debugged: debug-mcp could not follow them \
                 (not a runtime it debugs, or one it cannot follow into)."
            )
        })
    }

    /// The hint for a breakpoint that was not hit, when the program ran code outside the
    /// debugger: `missed` says what did not happen where it was debugged ("line 7 never ran
    /// in the 2 processes debugged (…)").
    pub(crate) fn hint(&self, missed: &str) -> Option<String> {
        self.describe().map(|what| {
            format!(
                "{missed}; the program also ran {what} that could not be followed: if the line \
                 ran there, its hits were not seen"
            )
        })
    }

    /// Adds `undebugged` to a failure's details, when there is anything to say.
    pub(crate) fn add_to(&self, failure: Failure) -> Failure {
        match self.is_empty() {
            true => failure,
            false => failure.with("undebugged", self.to_json()),
        }
    }

    /// Adds `undebugged` and the note (as `message`) to an exited session state.
    pub(crate) fn add_to_state(&self, state: &mut Value) {
        if let Some(note) = self.note() {
            state["undebugged"] = self.to_json();
            state["message"] = note.into();
        }
    }
}

/// A descendant's command, short enough for an answer.
fn command_label(d: &crate::process::Descendant) -> String {
    crate::debugger::limits::clip(&d.command, 200)
}
