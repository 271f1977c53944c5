//! The MCP methods: the `initialize` handshake and version negotiation, `ping`,
//! `logging/setLevel`, `tools/list`, and the routing of `tools/call` to a tool.
//!
//! Everything here answers at once; a tool call is handed back to the server as
//! [`Dispatch::Tool`] so it can run on a worker thread while the main loop keeps reading.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

use serde_json::{json, Value};

use crate::jsonrpc::{self, Request};
use crate::tools;

/// Protocol versions this server speaks, newest first.
pub(crate) const VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

const INSTRUCTIONS: &str = "debug-mcp runs programs under a real debugger. To learn what a \
value is at a line, call debug-script once with the command that runs the program (e.g. `node \
app.js`, no inspector flag needed), the breakpoint file and 1-based line, and a JavaScript \
expression: you get the value at every hit, in order, typed, plus the exit code and output tail. \
Use `breakpoint.condition` to keep only interesting hits and `maxHits` to cap long loops. If \
`resolvedLine` differs from your line, the breakpoint moved to the nearest line with code. A \
result of type `error` means the expression threw at that hit. `Process exited before \
breakpoint was hit` means the line never ran: check the stderr tail and the hint.";

pub(crate) struct State {
    /// Minimum level for `notifications/message`, an index into `tools::LOG_LEVELS`.
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

pub(crate) fn handle_request(state: &State, request: &Request) -> Dispatch {
    let params = &request.params;
    let reply = match request.method.as_str() {
        "initialize" => Ok(initialize(params)),
        "ping" => Ok(json!({})),
        "tools/list" => Ok(json!({"tools": tools::list()})),
        "logging/setLevel" => set_level(state, params),
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
        "capabilities": {"tools": {"listChanged": false}, "logging": {}},
        "serverInfo": {"name": "debug-mcp", "title": "debug-mcp: debugger for AI agents", "version": env!("CARGO_PKG_VERSION")},
        "instructions": INSTRUCTIONS,
    })
}

fn set_level(state: &State, params: &Value) -> Result<Value, jsonrpc::Error> {
    let level = params.get("level").and_then(Value::as_str).unwrap_or_default();
    let index = tools::LOG_LEVELS.iter().position(|l| *l == level).ok_or_else(|| {
        jsonrpc::Error::new(
            jsonrpc::INVALID_PARAMS,
            format!(
                "invalid log level {level:?}: expected one of {}",
                tools::LOG_LEVELS.join(", ")
            ),
        )
    })?;
    state.log_level.store(index as u8, Ordering::Relaxed);
    Ok(json!({}))
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
        match handle_request(&State::new(), &request) {
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
