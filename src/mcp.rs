//! The MCP methods: the `initialize` handshake and version negotiation, `ping`,
//! `logging/setLevel`, `tools/list`, and the routing of `tools/call` to a tool.
//!
//! Everything here answers at once; a tool call is handed back to the server as
//! [`Dispatch::Tool`] so it can run on a worker thread while the main loop keeps reading.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

use serde_json::{json, Value};

use crate::jsonrpc::{self, Request};
use crate::sessions::{Sessions, SESSIONS_URI};
use crate::tools;

/// Protocol versions this server speaks, newest first.
pub(crate) const VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// How to use the tools well, said once (MCP `instructions`): what every tool's description
/// would otherwise repeat. At most 2 KB.
const INSTRUCTIONS: &str = "debug-mcp runs programs under a real debugger: Node.js, Deno, web \
pages (headless Chromium), Python, C, C++, Rust, Zig, Go, and adapters named in \
debug-mcp.json. Lines are 1-based; relative paths resolve against `cwd`; breakpoints in \
TypeScript or bundled code work through source maps.\n\
One question, one call: debug-script runs a command to its end and answers the value of \
`expression` at every hit of `breakpoint`, typed, in order, with the exit code and output. \
Write the command as you would run it (`pytest -q tests/test_x.py`, `npm test`, `npx jest`, \
`go test -run TestX ./pkg`, `cargo test`, `./build/app`); no inspector flag. Every process it \
starts is followed. An expression that throws gives `{type: \"error\"}` for that hit. Keep \
hits few with `breakpoint.condition` and `maxHits`; `includeStack` adds each hit's frames. An \
`exited` or `timeout` error means the line never ran: read its `hint` and the stderr.\n\
To explore: debug-launch with `breakpoints` answers the first stop with its locals and a \
`sessionId` (omit it while one session is open). Then debug-continue (`step`, `to`, `pause`), \
debug-variables (`path` opens what was cut), debug-evaluate (`set` assigns), debug-stack, \
debug-breakpoint, debug-watch, debug-output; debug-restart after editing the code; debug-stop \
at the end. A call that waits answers state `running` when `timeout` passes: not an error. \
Every error has a stable `code` and says what to do.";

pub(crate) struct State {
    /// Minimum level for `notifications/message`, an index into `crate::call::LOG_LEVELS`.
    pub(crate) log_level: Arc<AtomicU8>,
}

impl State {
    pub(crate) fn new() -> State {
        // Until the client picks a level, send warnings and worse.
        State { log_level: Arc::new(AtomicU8::new(3)) }
    }
}

/// What to do with a request.
pub(crate) enum Dispatch {
    Reply(Result<Value, jsonrpc::Error>),
    /// Run a tool on a worker; the response comes from there.
    Tool {
        name: String,
        arguments: Value,
        progress_token: Option<Value>,
    },
}

pub(crate) fn handle_request(state: &State, sessions: &Sessions, request: &Request) -> Dispatch {
    let params = &request.params;
    let reply = match request.method.as_str() {
        "initialize" => Ok(initialize(params)),
        "ping" => Ok(json!({})),
        "tools/list" => Ok(json!({"tools": tools::list()})),
        "logging/setLevel" => set_level(state, params),
        "resources/list" => Ok(resources_list(sessions)),
        "resources/templates/list" => Ok(json!({"resourceTemplates": [{
            "uriTemplate": format!("{SESSIONS_URI}/{{id}}"), "name": "session",
            "title": "A debug session", "mimeType": "application/json",
            "description": "One session: state, location when paused, breakpoints."}]})),
        "resources/read" => resources_read(sessions, params),
        "resources/subscribe" | "resources/unsubscribe" => {
            subscribe(sessions, params, request.method == "resources/subscribe")
        }
        "prompts/list" => Ok(prompts_list()),
        "prompts/get" => prompts_get(params),
        "tools/call" => return tool_call(params),
        // The 2026 handshake-free revision probes with this; -32601 says "use initialize".
        method => Err(jsonrpc::Error::new(
            jsonrpc::METHOD_NOT_FOUND,
            format!("method not found: {method}"),
        )),
    };
    Dispatch::Reply(reply)
}

/// Version negotiation (all versions, "Lifecycle"): answer with the client's version when we
/// support it, otherwise with our latest and let the client decide.
fn initialize(params: &Value) -> Value {
    let asked = params.get("protocolVersion").and_then(Value::as_str).unwrap_or_default();
    let version = VERSIONS.iter().find(|v| **v == asked).unwrap_or(&VERSIONS[0]);
    json!({
        "protocolVersion": version,
        "capabilities": {"tools": {"listChanged": false}, "logging": {},
                         "resources": {"subscribe": true, "listChanged": true},
                         "prompts": {"listChanged": false}},
        "serverInfo": {"name": "debug-mcp", "title": "debug-mcp: debugger for AI agents", "version": env!("CARGO_PKG_VERSION")},
        "instructions": INSTRUCTIONS,
    })
}

fn set_level(state: &State, params: &Value) -> Result<Value, jsonrpc::Error> {
    let level = params.get("level").and_then(Value::as_str).unwrap_or_default();
    let index = crate::call::LOG_LEVELS.iter().position(|l| *l == level).ok_or_else(|| {
        jsonrpc::Error::new(
            jsonrpc::INVALID_PARAMS,
            format!(
                "invalid log level {level:?}: expected one of {}",
                crate::call::LOG_LEVELS.join(", ")
            ),
        )
    })?;
    state.log_level.store(index as u8, Ordering::Relaxed);
    Ok(json!({}))
}

/// MCP's error code for a resource that does not exist (2025-06-18, "Resources").
const RESOURCE_NOT_FOUND: i64 = -32002;

fn resources_list(sessions: &Sessions) -> Value {
    let mut resources =
        vec![json!({"uri": SESSIONS_URI, "name": "sessions", "title": "Debug sessions",
        "mimeType": "application/json", "description": "Every open debug session and its state."})];
    for session in sessions.list() {
        let id = session["sessionId"].as_str().unwrap_or_default();
        resources.push(json!({"uri": format!("{SESSIONS_URI}/{id}"), "name": format!("session {id}"),
            "mimeType": "application/json",
            "description": format!("Session {id}: {}", session["command"].as_str().unwrap_or_default())}));
    }
    json!({"resources": resources})
}

fn resources_read(sessions: &Sessions, params: &Value) -> Result<Value, jsonrpc::Error> {
    let uri = params.get("uri").and_then(Value::as_str).unwrap_or_default();
    let content = if uri == SESSIONS_URI {
        json!({"sessions": sessions.list()})
    } else {
        let id = uri.strip_prefix(SESSIONS_URI).and_then(|r| r.strip_prefix('/'));
        id.and_then(|id| sessions.get(id)).ok_or_else(|| {
            jsonrpc::Error::new(
                RESOURCE_NOT_FOUND,
                format!("resource not found: {uri} (list them with resources/list)"),
            )
        })?
    };
    Ok(
        json!({"contents": [{"uri": uri, "mimeType": "application/json", "text": content.to_string()}]}),
    )
}

fn subscribe(sessions: &Sessions, params: &Value, on: bool) -> Result<Value, jsonrpc::Error> {
    let uri = params.get("uri").and_then(Value::as_str).ok_or_else(|| {
        jsonrpc::Error::new(jsonrpc::INVALID_PARAMS, "a string `uri` is required")
    })?;
    if !uri.starts_with(SESSIONS_URI) {
        return Err(jsonrpc::Error::new(RESOURCE_NOT_FOUND, format!("resource not found: {uri}")));
    }
    sessions.subscribe(uri, on);
    Ok(json!({}))
}

fn prompts_list() -> Value {
    json!({"prompts": [
        {"name": "analyze-crash", "title": "Analyze a crash",
         "description": "Find why a debugged program threw: stop at the exception, read the stack and the values that led to it.",
         "arguments": [{"name": "sessionId", "description": "The session (from debug-launch).", "required": true}]},
        {"name": "investigate-condition", "title": "Investigate when a condition holds",
         "description": "Find where and when an expression becomes true, and what the state is then.",
         "arguments": [{"name": "sessionId", "description": "The session (from debug-launch).", "required": true},
                       {"name": "expression", "description": "An expression in the program's language, e.g. `order.total < 0`.", "required": true}]}
    ]})
}

fn prompts_get(params: &Value) -> Result<Value, jsonrpc::Error> {
    let argument = |name: &str| {
        params.pointer(&format!("/arguments/{name}")).and_then(Value::as_str).ok_or_else(|| {
            jsonrpc::Error::new(
                jsonrpc::INVALID_PARAMS,
                format!("the prompt needs the argument `{name}`"),
            )
        })
    };
    let (description, text) = match params.get("name").and_then(Value::as_str).unwrap_or_default() {
        "analyze-crash" => {
            let id = argument("sessionId")?;
            (
                "Analyze a crash",
                format!(
                "Debug session {id} runs a program that crashes. 1. Call debug-breakpoint with \
                 exceptions `uncaught` (or `all` if the error is caught and rethrown). 2. Call \
                 debug-continue until the state is `paused` with reason `exception`; read \
                 `exception` (class and message) and `location`. 3. Call debug-stack, then \
                 debug-variables (and debug-evaluate) on the frames that passed the bad value \
                 down. 4. Explain the root cause from those values, not from the message alone, \
                 and propose the fix. Finish with debug-stop."),
            )
        }
        "investigate-condition" => {
            let id = argument("sessionId")?;
            let expression = argument("expression")?;
            (
                "Investigate when a condition holds",
                format!(
                "In debug session {id}, find when `{expression}` becomes true. 1. Set breakpoints \
                 (debug-breakpoint) with condition `{expression}` on the lines that change \
                 the values it reads; use a logpoint (logMessage) to trace them without \
                 stopping. 2. debug-continue until a stop; read `location`, `locals` and \
                 debug-stack. 3. Use debug-variables with `path` to open nested values, and \
                 debug-output for the logpoint trace. 4. Report the first place and moment the \
                 condition holds and why. Finish with debug-stop."),
            )
        }
        other => {
            return Err(jsonrpc::Error::new(
                jsonrpc::INVALID_PARAMS,
                format!("unknown prompt {other:?}: analyze-crash or investigate-condition"),
            ))
        }
    };
    Ok(json!({"description": description,
              "messages": [{"role": "user", "content": {"type": "text", "text": text}}]}))
}

fn tool_call(params: &Value) -> Dispatch {
    let Some(name) = params.get("name").and_then(Value::as_str) else {
        return Dispatch::Reply(Err(jsonrpc::Error::new(
            jsonrpc::INVALID_PARAMS,
            "tools/call needs a string `name`",
        )));
    };
    if !tools::exists(name) {
        return Dispatch::Reply(Err(jsonrpc::Error::new(
            jsonrpc::INVALID_PARAMS,
            format!("Unknown tool: {name}"),
        )));
    }
    let progress_token =
        params.pointer("/_meta/progressToken").filter(|t| t.is_string() || t.is_number()).cloned();
    Dispatch::Tool {
        name: name.to_string(),
        arguments: params.get("arguments").cloned().unwrap_or(Value::Null),
        progress_token,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jsonrpc::RequestId;

    fn reply(method: &str, params: Value) -> Result<Value, jsonrpc::Error> {
        let request =
            Request { id: RequestId::from_value(json!(1)), method: method.into(), params };
        match handle_request(&State::new(), &Sessions::default(), &request) {
            Dispatch::Reply(reply) => reply,
            Dispatch::Tool { name, .. } => Ok(json!({"tool": name})),
        }
    }

    #[test]
    fn negotiates_versions() {
        for (asked, answered) in [
            ("2024-11-05", "2024-11-05"),
            ("2025-03-26", "2025-03-26"),
            ("2025-06-18", "2025-06-18"),
            ("2025-11-25", "2025-11-25"),
            ("2099-01-01", "2025-11-25"),
            ("", "2025-11-25"),
        ] {
            let result = reply("initialize", json!({"protocolVersion": asked})).unwrap();
            assert_eq!(result["protocolVersion"], answered, "asked {asked}");
        }
    }

    #[test]
    fn routes_methods() {
        assert_eq!(reply("ping", Value::Null).unwrap(), json!({}));
        assert_eq!(
            reply("server/discover", json!({})).unwrap_err().code,
            jsonrpc::METHOD_NOT_FOUND
        );
        assert_eq!(reply("logging/setLevel", json!({"level": "debug"})).unwrap(), json!({}));
        assert_eq!(
            reply("logging/setLevel", json!({"level": "loud"})).unwrap_err().code,
            jsonrpc::INVALID_PARAMS
        );
        let unknown = reply("tools/call", json!({"name": "nope"})).unwrap_err();
        assert_eq!(unknown, jsonrpc::Error::new(jsonrpc::INVALID_PARAMS, "Unknown tool: nope"));
        assert_eq!(
            reply("tools/call", json!({"name": "debug-script"})).unwrap(),
            json!({"tool": "debug-script"})
        );
    }
}
