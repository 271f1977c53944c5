//! The MCP tools: each declared once, as a [`Tool`] that carries its name, its schema and its
//! handler, so a name and its fields are written in one place and the fields a call may carry
//! are exactly its schema's (ripgrep's `Flag` habit).
//!
//! One file per concern: `script.rs` (`debug-script`), `launch.rs` (starting, attaching,
//! listing and ending sessions), `control.rs` (continue, step, pause, exceptions),
//! `breakpoints.rs`, `inspect.rs` (stack, variables, evaluation, output, sources). Handlers run
//! on a worker thread of their own (see `server.rs`) and get a [`Call`]: the cancel signal to
//! select on, and ways to report progress and log to the client. They return a [`ToolResult`]
//! or a [`Failure`]; `render_failure` turns the latter into the error result.

mod breakpoints;
mod control;
mod inspect;
mod launch;
mod page;
pub(crate) mod script;

pub(crate) use crate::call::{ClientLog, Progress};

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crossbeam_channel::{select, Sender};
use serde_json::{json, Map, Value};

use crate::debugger::session::{Command, Handle, OnChange, Reply};
use crate::debugger::{Code, Failure};
use crate::jsonrpc::Json;
use crate::sessions::Sessions;
use crate::shell::{self, CommandLine};
use crate::tools::script::{render_failure, DEFAULT_TIMEOUT_MS, MAX_TIMEOUT_MS};

/// What a running tool call can use besides its arguments: the [`crate::call::Call`] the
/// debugger takes (cancel, progress, log), and the open sessions.
pub(crate) struct Call {
    pub(crate) call: crate::call::Call,
    /// The open debug sessions (shared by every call).
    pub(crate) sessions: Sessions,
}

impl std::ops::Deref for Call {
    type Target = crate::call::Call;

    fn deref(&self) -> &crate::call::Call {
        &self.call
    }
}

/// One tool: what `tools/list` shows of it and how a call runs.
pub(crate) struct Tool {
    pub(crate) name: &'static str,
    pub(crate) title: &'static str,
    pub(crate) description: &'static str,
    /// The input schema's `properties`: also the only fields a call may carry.
    pub(crate) properties: fn() -> Value,
    pub(crate) required: &'static [&'static str],
    /// Reads only (`readOnlyHint`, `idempotentHint`).
    pub(crate) read_only: bool,
    /// The output schema.
    pub(crate) output: fn() -> Value,
    pub(crate) run: fn(&Args, &Call) -> Result<ToolResult, Failure>,
}

impl Tool {
    fn declaration(&self) -> Value {
        json!({
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "inputSchema": {"type": "object", "properties": (self.properties)(),
                            "required": self.required, "additionalProperties": false},
            "outputSchema": (self.output)(),
            "annotations": {"title": self.title, "readOnlyHint": self.read_only,
                            "destructiveHint": false, "idempotentHint": self.read_only,
                            "openWorldHint": false}
        })
    }
}

/// Every tool, in the order `tools/list` shows them.
fn listed() -> impl Iterator<Item = &'static Tool> {
    [script::TOOLS, launch::TOOLS, control::TOOLS, breakpoints::TOOLS, inspect::TOOLS]
        .into_iter()
        .flatten()
}

/// Every tool a call may name: those listed, and the former names of what a listed tool now
/// does too (`debug-step` is `debug-continue` with `step`), which still answer as they did.
fn all() -> impl Iterator<Item = &'static Tool> {
    let former = [launch::FORMER, control::FORMER, breakpoints::FORMER, inspect::FORMER];
    listed().chain(former.into_iter().flatten())
}

/// Every tool, as `tools/list` shows it.
pub(crate) fn list() -> Vec<Value> {
    listed().map(Tool::declaration).collect()
}

/// Whether `name` is a tool (an unknown name is a protocol error, not a tool result).
pub(crate) fn exists(name: &str) -> bool {
    all().any(|tool| tool.name == name)
}

/// Runs a tool. `None` means the call was cancelled: no response is sent for it.
pub(crate) fn call(name: &str, arguments: &Value, call: &Call) -> Option<ToolResult> {
    let Some(tool) = all().find(|tool| tool.name == name) else {
        return Some(ToolResult::error(
            Code::UnknownTool,
            format!("Unknown tool: {name}"),
            Map::new(),
        ));
    };
    let run = || {
        let args = Args::new(arguments)?;
        args.deny_unknown_in(&(tool.properties)())?;
        (tool.run)(&args, call)
    };
    match run() {
        Ok(result) => Some(result),
        Err(failure) => render_failure(failure),
    }
}

/// A session tool's answer: its state or other object, as the result.
fn answer(reply: Reply) -> Result<ToolResult, Failure> {
    reply.map(|value| ToolResult::ok(Json::from(&value), Vec::new()))
}

/// A call waits at most this much longer than its own timeout for the session to answer.
const MARGIN: Duration = Duration::from_secs(15);

/// Sends a command to a session (`sessionId`, or the only one) and waits for its reply, or
/// the cancel signal.
fn ask(
    args: &Args,
    call: &Call,
    limit: Duration,
    make: impl FnOnce(Sender<Reply>) -> Command,
) -> Reply {
    let id = args.optional_string("sessionId")?;
    ask_session(call, id, limit, make)
}

fn ask_session(
    call: &Call,
    id: Option<&str>,
    limit: Duration,
    make: impl FnOnce(Sender<Reply>) -> Command,
) -> Reply {
    let (id, commands) = call.sessions.find(id).map_err(|m| Failure::new(Code::NoSession, m))?;
    let (reply_tx, reply) = crossbeam_channel::bounded(1);
    commands
        .send(make(reply_tx))
        .map_err(|_| Failure::new(Code::NoSession, format!("session {id} has ended")))?;
    select! {
        recv(reply) -> answer => answer.unwrap_or_else(|_| Err(Failure::new(Code::NoSession, format!("session {id} ended while answering")))),
        recv(call.cancel) -> _ => Err(Failure::Cancelled),
        recv(crossbeam_channel::after(limit + MARGIN)) -> _ => Err(Failure::new(Code::Internal, format!("session {id} did not answer"))),
    }
}

/// Opens a session: reserves its id, starts it with `start` and registers it. Gives the id
/// and the first state.
fn open_session(
    call: &Call,
    start: impl FnOnce(&str, OnChange) -> Result<(Handle, Value), Failure>,
) -> Result<(String, Value), Failure> {
    let (id, held) = call.sessions.next_id().map_err(|m| Failure::new(Code::TooManySessions, m))?;
    let watch = call.sessions.watch();
    let (handle, state) = start(&id, Arc::new(move |id: &str| watch.changed(id)))?;
    call.sessions.insert(id.clone(), handle, held);
    Ok((id, state))
}

fn session_id() -> Value {
    json!({"type": "string"})
}

fn timeout() -> Value {
    json!({"type": "integer", "minimum": 1, "maximum": MAX_TIMEOUT_MS, "description": "ms (30000)"})
}

fn timeout_arg(args: &Args) -> Result<Duration, Failure> {
    let ms = args.integer("timeout", 1, MAX_TIMEOUT_MS, Some(DEFAULT_TIMEOUT_MS))?;
    Ok(Duration::from_millis(ms))
}

/// Stop states and other session answers vary in shape; every one is an object.
fn any_object() -> Value {
    json!({"type": "object", "properties": {
        "sessionId": {"type": "string"},
        "state": {"type": "string", "enum": ["paused", "running", "exited"]},
        "error": {"type": "string"}, "code": {"type": "string"}}})
}

/// The schema of `cwd`, `env` and `stdin`: where and how a program runs.
fn run_properties(stdin: bool) -> Value {
    let mut properties = json!({
        "cwd": {"type": "string", "description": "relative paths resolve here"},
        "env": {"type": "object", "additionalProperties": {"type": "string"}}
    });
    if stdin {
        properties["stdin"] = json!({"type": "string"});
    }
    properties
}

/// Adds `more` (an object's properties) to `properties`.
fn extend(mut properties: Value, more: Value) -> Value {
    if let (Some(all), Value::Object(more)) = (properties.as_object_mut(), more) {
        all.extend(more);
    }
    properties
}

/// Fails unless at most one of `fields` is given: the ways a merged tool is called.
fn one_of(args: &Args, fields: &[&str]) -> Result<(), ArgError> {
    let given: Vec<&str> = fields.iter().copied().filter(|f| args.has(f)).collect();
    match given.as_slice() {
        [_, second, ..] => {
            Err(ArgError::new(second, format!("give one of {}, not several", fields.join(", "))))
        }
        _ => Ok(()),
    }
}

/// `cwd`: a directory that exists, made absolute.
fn cwd_arg(args: &Args) -> Result<Option<PathBuf>, Failure> {
    let Some(cwd) = args.optional_string("cwd")? else { return Ok(None) };
    let path = std::path::absolute(cwd).unwrap_or_else(|_| PathBuf::from(cwd));
    if !path.is_dir() {
        return Err(Failure::new(
            Code::FileNotFound,
            format!("`cwd` {} is not a directory", path.display()),
        )
        .with("field", "cwd".into()));
    }
    Ok(Some(path))
}

/// `command` split, with `cwd`, `env` and `stdin` applied.
fn command_arg(args: &Args) -> Result<CommandLine, Failure> {
    let mut command = shell::split(args.string("command")?)
        .map_err(|problem| ArgError { field: "command".into(), problem })?;
    command.cwd = cwd_arg(args)?;
    command.env.extend(args.string_map("env")?);
    command.stdin = args.optional_string("stdin")?.map(String::from);
    command.without_launchers().map_err(|why| {
        Failure::new(Code::InvalidCommand, format!("`command`: {why}"))
            .with("field", "command".into())
    })
}

/// The working directory of the session a call names (or the only one), when it has one.
fn session_cwd(args: &Args, call: &Call) -> Result<Option<PathBuf>, Failure> {
    let id = args.optional_string("sessionId")?;
    let Ok((id, _)) = call.sessions.find(id) else { return Ok(None) };
    let summary = call.sessions.list().into_iter().find(|s| s["sessionId"] == id.as_str());
    Ok(summary.and_then(|s| s["cwd"].as_str().map(PathBuf::from)))
}

/// A path as the program sees it: relative ones against `cwd`.
fn in_dir(path: &str, cwd: Option<&Path>) -> PathBuf {
    match cwd {
        Some(cwd) if Path::new(path).is_relative() => cwd.join(path),
        _ => PathBuf::from(path),
    }
}

/// `{"sessionId": ...}` and the given properties.
fn with_session(mut properties: Value) -> Value {
    properties["sessionId"] = session_id();
    properties
}

/// What a tool returns: its structured content (as JSON text, so a large answer is never
/// cloned on its way out), whether it failed, and extra sentences for the text blocks.
#[derive(Debug)]
pub(crate) struct ToolResult {
    pub(crate) structured: Json,
    failed: bool,
    pub(crate) notes: Vec<String>,
}

impl ToolResult {
    pub(crate) fn ok(structured: Json, notes: Vec<String>) -> ToolResult {
        ToolResult { structured, failed: false, notes }
    }

    /// A failed call: `structuredContent` holds `error` (the message), `code` (a stable word an
    /// agent can branch on) and whatever else helps (`exitCode`, `output`, `field`).
    pub(crate) fn error(
        code: Code,
        message: String,
        mut details: Map<String, Value>,
    ) -> ToolResult {
        details.insert("error".into(), message.into());
        details.insert("code".into(), code.as_str().into());
        let structured = Json::from(&Value::Object(details));
        ToolResult { structured, failed: true, notes: Vec::new() }
    }

    pub(crate) fn is_error(&self) -> bool {
        self.failed
    }

    /// The `tools/call` result. The last text block repeats the structured content as JSON,
    /// since many clients show the model only `content`; the notes come first so they are
    /// read. A failure has only that block: its message is the structured content's `error`.
    ///
    /// Written into one buffer sized for it: a 10,000-hit answer is about a megabyte, and
    /// each intermediate copy would add one to the server's peak memory.
    pub(crate) fn into_json(self, modern: bool) -> Json {
        let structured = self.structured.as_str();
        let texts: Vec<&str> = self.notes.iter().map(String::as_str).chain([structured]).collect();
        let escaping = texts.iter().map(|t| t.len() + t.len() / 4 + 32).sum::<usize>();
        let mut out: Vec<u8> = Vec::with_capacity(escaping + structured.len() + 64);
        out.extend_from_slice(br#"{"content":["#);
        for (index, text) in texts.iter().enumerate() {
            if index > 0 {
                out.push(b',');
            }
            out.extend_from_slice(br#"{"type":"text","text":"#);
            serde_json::to_writer(&mut out, text).expect("a string always serialises");
            out.push(b'}');
        }
        out.extend_from_slice(br#"],"structuredContent":"#);
        out.extend_from_slice(structured.as_bytes());
        if self.is_error() {
            out.extend_from_slice(br#","isError":true"#);
        }
        if modern {
            out.extend_from_slice(br#","resultType":"complete""#);
        }
        out.push(b'}');
        Json::from_serialized(String::from_utf8(out).expect("JSON text is UTF-8"))
    }
}

/// A bad argument: which field, and what was wrong with it.
#[derive(Debug, PartialEq)]
pub(crate) struct ArgError {
    pub(crate) field: String,
    pub(crate) problem: String,
}

impl ArgError {
    pub(crate) fn new(field: &str, problem: impl Into<String>) -> ArgError {
        ArgError { field: field.to_string(), problem: problem.into() }
    }
}

impl From<ArgError> for Failure {
    fn from(e: ArgError) -> Failure {
        Failure::new(
            Code::InvalidArguments,
            format!("invalid argument `{}`: {}", e.field, e.problem),
        )
        .with("field", e.field.into())
    }
}

/// Typed access to a tool's `arguments` object that names the field in every error.
pub(crate) struct Args<'a> {
    object: &'a Map<String, Value>,
    /// `breakpoint.` for a nested object, empty at the top.
    prefix: String,
}

impl<'a> Args<'a> {
    pub(crate) fn new(arguments: &'a Value) -> Result<Args<'a>, ArgError> {
        static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
        match arguments {
            Value::Null => Ok(Args { object: EMPTY.get_or_init(Map::new), prefix: String::new() }),
            Value::Object(object) => Ok(Args { object, prefix: String::new() }),
            _ => Err(ArgError::new("arguments", "expected an object")),
        }
    }

    fn field(&self, name: &str) -> String {
        format!("{}{name}", self.prefix)
    }

    /// Fails on any key that is not one of `schema`'s `properties`.
    pub(crate) fn deny_unknown_in(&self, schema_properties: &Value) -> Result<(), ArgError> {
        let known: Vec<&str> = schema_properties
            .as_object()
            .map_or(Vec::new(), |p| p.keys().map(String::as_str).collect());
        self.deny_unknown(&known)
    }

    /// Fails on any key the tool does not know, so a typo is not silently ignored.
    pub(crate) fn deny_unknown(&self, known: &[&str]) -> Result<(), ArgError> {
        match self.object.keys().find(|k| !known.contains(&k.as_str())) {
            Some(key) => Err(ArgError::new(
                &self.field(key),
                format!("unknown argument; expected one of: {}", known.join(", ")),
            )),
            None => Ok(()),
        }
    }

    /// Whether these are the fields of an object inside the arguments, not the arguments.
    pub(crate) fn is_nested(&self) -> bool {
        !self.prefix.is_empty()
    }

    /// Whether the call gave `name` (and not as null).
    pub(crate) fn has(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    fn get(&self, name: &str) -> Option<&'a Value> {
        self.object.get(name).filter(|v| !v.is_null())
    }

    /// A field as given, for one that may have several types; its name for an error.
    pub(crate) fn value(&self, name: &str) -> (Option<&'a Value>, String) {
        (self.get(name), self.field(name))
    }

    pub(crate) fn object(&self, name: &str) -> Result<Args<'a>, ArgError> {
        match self.get(name) {
            Some(Value::Object(object)) => {
                Ok(Args { object, prefix: format!("{}.", self.field(name)) })
            }
            Some(other) => Err(ArgError::new(
                &self.field(name),
                format!("expected an object, got {}", kind(other)),
            )),
            None => Err(ArgError::new(&self.field(name), "required")),
        }
    }

    /// An optional array, each item read by `item` with its field name (`name[i]`).
    fn array<T>(
        &self,
        name: &str,
        item: impl Fn(String, &'a Value) -> Result<T, ArgError>,
    ) -> Result<Vec<T>, ArgError> {
        let field = self.field(name);
        match self.get(name) {
            None => Ok(Vec::new()),
            Some(Value::Array(items)) => {
                items.iter().enumerate().map(|(i, v)| item(format!("{field}[{i}]"), v)).collect()
            }
            Some(other) => {
                Err(ArgError::new(&field, format!("expected an array, got {}", kind(other))))
            }
        }
    }

    /// An optional object of strings (`env`), as pairs.
    pub(crate) fn string_map(&self, name: &str) -> Result<Vec<(String, String)>, ArgError> {
        let field = self.field(name);
        match self.get(name) {
            None => Ok(Vec::new()),
            Some(Value::Object(map)) => map
                .iter()
                .map(|(key, value)| match value {
                    Value::String(s) => Ok((key.clone(), s.clone())),
                    other => Err(ArgError::new(
                        &format!("{field}.{key}"),
                        format!("expected a string, got {}", kind(other)),
                    )),
                })
                .collect(),
            Some(other) => {
                Err(ArgError::new(&field, format!("expected an object, got {}", kind(other))))
            }
        }
    }

    /// An optional array of non-empty strings.
    pub(crate) fn strings(&self, name: &str) -> Result<Vec<String>, ArgError> {
        self.array(name, |field, item| match item {
            Value::String(s) if !s.trim().is_empty() => Ok(s.clone()),
            Value::String(_) => Err(ArgError::new(&field, "must not be empty")),
            other => Err(ArgError::new(&field, format!("expected a string, got {}", kind(other)))),
        })
    }

    /// An optional array of objects (each read with the field named `name[i]`).
    pub(crate) fn objects(&self, name: &str) -> Result<Vec<Args<'a>>, ArgError> {
        self.array(name, |field, item| match item {
            Value::Object(object) => Ok(Args { object, prefix: format!("{field}.") }),
            other => Err(ArgError::new(&field, format!("expected an object, got {}", kind(other)))),
        })
    }

    /// One of `choices`; `default` when absent.
    pub(crate) fn choice(
        &self,
        name: &str,
        choices: &[&'static str],
        default: Option<&'static str>,
    ) -> Result<&'static str, ArgError> {
        match self.optional_string(name)? {
            None => default.ok_or_else(|| ArgError::new(&self.field(name), "required")),
            Some(value) => choices.iter().find(|c| **c == value).copied().ok_or_else(|| {
                ArgError::new(
                    &self.field(name),
                    format!("expected one of {}, got {value:?}", choices.join(", ")),
                )
            }),
        }
    }

    pub(crate) fn string(&self, name: &str) -> Result<&'a str, ArgError> {
        match self.optional_string(name)? {
            Some(s) if s.trim().is_empty() => {
                Err(ArgError::new(&self.field(name), "must not be empty"))
            }
            Some(s) => Ok(s),
            None => Err(ArgError::new(&self.field(name), "required")),
        }
    }

    pub(crate) fn optional_string(&self, name: &str) -> Result<Option<&'a str>, ArgError> {
        match self.get(name) {
            Some(Value::String(s)) => Ok(Some(s)),
            Some(other) => Err(ArgError::new(
                &self.field(name),
                format!("expected a string, got {}", kind(other)),
            )),
            None => Ok(None),
        }
    }

    /// An integer in `min..=max`; `default` when absent.
    pub(crate) fn integer(
        &self,
        name: &str,
        min: u64,
        max: u64,
        default: Option<u64>,
    ) -> Result<u64, ArgError> {
        let field = self.field(name);
        let range = || format!("expected an integer from {min} to {max}");
        match self.get(name) {
            None => default.ok_or_else(|| ArgError::new(&field, "required")),
            Some(Value::Number(n)) => {
                // Accept 42.0 (some clients send every number as a float), not 42.5.
                let whole = n.as_u64().or_else(|| {
                    n.as_f64()
                        .filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f <= u64::MAX as f64)
                        .map(|f| f as u64)
                });
                match whole {
                    Some(v) if (min..=max).contains(&v) => Ok(v),
                    _ => Err(ArgError::new(&field, format!("{}, got {n}", range()))),
                }
            }
            Some(other) => Err(ArgError::new(&field, format!("{}, got {}", range(), kind(other)))),
        }
    }

    pub(crate) fn boolean(&self, name: &str, default: bool) -> Result<bool, ArgError> {
        match self.get(name) {
            None => Ok(default),
            Some(Value::Bool(b)) => Ok(*b),
            Some(other) => Err(ArgError::new(
                &self.field(name),
                format!("expected true or false, got {}", kind(other)),
            )),
        }
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(arguments: Value, expected: &str) {
        let run = || -> Result<String, ArgError> {
            let args = Args::new(&arguments)?;
            args.deny_unknown(&["a", "n", "b", "o"])?;
            let a = args.string("a")?;
            let n = args.integer("n", 1, 10, Some(5))?;
            let b = args.boolean("b", false)?;
            let o = args.object("o")?;
            let line = o.integer("line", 1, 100, None)?;
            Ok(format!("{a} {n} {b} {line}"))
        };
        let got = match run() {
            Ok(s) => s,
            Err(e) => format!("{}: {}", e.field, e.problem),
        };
        assert_eq!(got, expected, "arguments: {arguments}");
    }

    #[test]
    fn arguments_name_the_bad_field() {
        check(json!({"a": "x", "o": {"line": 3}}), "x 5 false 3");
        check(json!({"a": "x", "n": 7.0, "b": true, "o": {"line": 3}}), "x 7 true 3");
        check(json!([]), "arguments: expected an object");
        check(json!({"o": {"line": 3}}), "a: required");
        check(json!({"a": "", "o": {"line": 3}}), "a: must not be empty");
        check(json!({"a": 3, "o": {"line": 3}}), "a: expected a string, got a number");
        check(json!({"a": "x", "n": 0, "o": {}}), "n: expected an integer from 1 to 10, got 0");
        check(json!({"a": "x", "n": 2.5, "o": {}}), "n: expected an integer from 1 to 10, got 2.5");
        check(
            json!({"a": "x", "n": "3", "o": {}}),
            "n: expected an integer from 1 to 10, got a string",
        );
        check(json!({"a": "x", "b": "yes", "o": {}}), "b: expected true or false, got a string");
        check(json!({"a": "x"}), "o: required");
        check(json!({"a": "x", "o": 1}), "o: expected an object, got a number");
        check(json!({"a": "x", "o": {}}), "o.line: required");
        check(
            json!({"a": "x", "o": {"line": -1}}),
            "o.line: expected an integer from 1 to 100, got -1",
        );
        check(
            json!({"a": "x", "zz": 1, "o": {}}),
            "zz: unknown argument; expected one of: a, n, b, o",
        );
    }
}
