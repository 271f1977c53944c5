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

/// Protocol versions this server speaks through `initialize`, newest first.
pub(crate) const VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// The stateless revision: no handshake; each request says its version in `_meta`.
pub(crate) const MODERN: &str = "2026-07-28";
const VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";
const LOG_LEVEL_KEY: &str = "io.modelcontextprotocol/logLevel";
/// MCP 2026-07-28: the request's protocol version is not one the server speaks.
pub(crate) const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

/// Every version this server speaks, newest first.
fn supported() -> Vec<&'static str> {
    std::iter::once(MODERN).chain(VERSIONS).collect()
}

/// Whether a request speaks the stateless revision (its `_meta` says 2026-07-28); a version
/// the server does not speak is refused with the ones it does.
fn modern(params: &Value) -> Result<bool, jsonrpc::Error> {
    let Some(version) = params.pointer("/_meta").and_then(|m| m.get(VERSION_KEY)) else {
        return Ok(false);
    };
    match version.as_str() {
        Some(MODERN) => Ok(true),
        Some(v) if VERSIONS.contains(&v) => Ok(false),
        _ => Err(jsonrpc::Error::with_data(
            UNSUPPORTED_PROTOCOL_VERSION,
            format!(
                "unsupported protocol version {version}: this server speaks {}",
                supported().join(", ")
            ),
            json!({"supported": supported(), "requested": version}),
        )),
    }
}

/// How long a client may keep a list's answer, and whether anyone may share it (2026-07-28):
/// the tools and prompts never change while the server runs; sessions do.
fn cache_hints(method: &str) -> Option<(u64, &'static str)> {
    match method {
        "server/discover" | "tools/list" | "prompts/list" | "resources/templates/list" => {
            Some((3_600_000, "public"))
        }
        "resources/list" | "resources/read" => Some((0, "private")),
        _ => None,
    }
}

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
        /// Its answer says `resultType` (2026-07-28).
        modern: bool,
        /// The lowest level of `notifications/message` it sends: the client's `logging/setLevel`,
        /// or, for a stateless request, the level its `_meta` asks for (none: no log).
        log_level: Option<u8>,
        /// Answered at once with a task handle, the answer read with `tasks/get`.
        task: bool,
    },
}

pub(crate) fn handle_request(state: &State, sessions: &Sessions, request: &Request) -> Dispatch {
    let params = &request.params;
    let modern = match modern(params) {
        Ok(modern) => modern,
        Err(error) => return Dispatch::Reply(Err(error)),
    };
    let reply = match request.method.as_str() {
        "server/discover" => Ok(discover()),
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
        "tools/call" => return tool_call(params, modern),
        method => Err(jsonrpc::Error::new(
            jsonrpc::METHOD_NOT_FOUND,
            format!("method not found: {method}"),
        )),
    };
    let reply = match (reply, modern || request.method == "server/discover") {
        (Ok(mut result), true) => {
            result["resultType"] = "complete".into();
            if let Some((ttl, scope)) = cache_hints(&request.method) {
                result["ttlMs"] = ttl.into();
                result["cacheScope"] = scope.into();
            }
            Ok(result)
        }
        (reply, _) => reply,
    };
    Dispatch::Reply(reply)
}

fn capabilities() -> Value {
    json!({"tools": {"listChanged": false}, "logging": {},
           "resources": {"subscribe": true, "listChanged": true},
           "prompts": {"listChanged": false}})
}

/// What `server/discover` says beside the capabilities every revision has: the Tasks
/// extension (2026-07-28).
fn discovered_capabilities() -> Value {
    let mut capabilities = capabilities();
    capabilities["extensions"] = json!({crate::tasks::EXTENSION: {}});
    capabilities
}

fn server_info() -> Value {
    json!({"name": "debug-mcp", "title": "debug-mcp: debugger for AI agents",
           "version": env!("CARGO_PKG_VERSION")})
}

/// `server/discover` (2026-07-28): the versions, capabilities and instructions, which a
/// stateless client asks for instead of `initialize`.
fn discover() -> Value {
    json!({
        "supportedVersions": supported(),
        "capabilities": discovered_capabilities(),
        "instructions": INSTRUCTIONS,
        "_meta": {"io.modelcontextprotocol/serverInfo": server_info()},
    })
}

/// Version negotiation (all versions, "Lifecycle"): answer with the client's version when we
/// support it, otherwise with our latest and let the client decide.
fn initialize(params: &Value) -> Value {
    let asked = params.get("protocolVersion").and_then(Value::as_str).unwrap_or_default();
    let version = VERSIONS.iter().find(|v| **v == asked).unwrap_or(&VERSIONS[0]);
    json!({
        "protocolVersion": version,
        "capabilities": capabilities(),
        "serverInfo": server_info(),
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

fn tool_call(params: &Value, modern: bool) -> Dispatch {
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
    let asked = params.pointer("/_meta").and_then(|m| m.get(LOG_LEVEL_KEY)).and_then(Value::as_str);
    let asked = asked.and_then(|level| crate::call::LOG_LEVELS.iter().position(|l| *l == level));
    // A run of a whole program may be long: as a task when the client takes tasks.
    let takes_tasks = params
        .pointer("/_meta")
        .and_then(|m| m.get("io.modelcontextprotocol/clientCapabilities"))
        .and_then(|c| c.pointer("/extensions"))
        .is_some_and(|e| e.get(crate::tasks::EXTENSION).is_some());
    Dispatch::Tool {
        name: name.to_string(),
        arguments: params.get("arguments").cloned().unwrap_or(Value::Null),
        progress_token,
        task: modern && takes_tasks && name == "debug-script",
        modern,
        // A stateless request opts in to log messages, per request.
        log_level: match modern {
            true => asked.map(|level| level as u8),
            false => None,
        },
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

    /// MCP 2026-07-28: `server/discover` instead of `initialize`; a request's version in its
    /// `_meta`; results tagged `resultType`, lists with cache hints; an unknown version refused
    /// with the ones spoken; handshake-era requests answered as before.
    #[test]
    fn speaks_the_stateless_revision() {
        let meta = |version: &str| {
            json!({"_meta": {"io.modelcontextprotocol/protocolVersion": version,
                             "io.modelcontextprotocol/clientCapabilities": {}}})
        };
        let discovered = reply("server/discover", meta(MODERN)).unwrap();
        assert_eq!(
            discovered["supportedVersions"],
            json!(["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"])
        );
        assert_eq!(discovered["capabilities"]["tools"], json!({"listChanged": false}));
        assert_eq!(discovered["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "debug-mcp");
        assert_eq!(
            (&discovered["resultType"], &discovered["cacheScope"]),
            (&json!("complete"), &json!("public"))
        );
        assert!(discovered["instructions"].as_str().unwrap().starts_with("debug-mcp runs"));
        let tools = reply("tools/list", meta(MODERN)).unwrap();
        assert_eq!(
            (&tools["resultType"], &tools["ttlMs"]),
            (&json!("complete"), &json!(3_600_000))
        );
        let resources = reply("resources/list", meta(MODERN)).unwrap();
        assert_eq!((&resources["ttlMs"], &resources["cacheScope"]), (&json!(0), &json!("private")));
        // Handshake-era requests are answered as they were.
        let legacy = reply("tools/list", meta("2025-11-25")).unwrap();
        assert!(legacy.get("resultType").is_none() && legacy.get("ttlMs").is_none());
        assert!(reply("tools/list", json!({})).unwrap().get("resultType").is_none());
        let refused = reply("tools/list", meta("2027-01-01")).unwrap_err();
        assert_eq!(refused.code, UNSUPPORTED_PROTOCOL_VERSION);
        assert_eq!(refused.data.unwrap()["supported"][0], "2026-07-28");
        // A stateless call opts in to log messages per request.
        let call = |meta: Value| {
            let request = Request {
                id: RequestId::from_value(json!(1)),
                method: "tools/call".into(),
                params: json!({"name": "debug-sessions", "arguments": {}, "_meta": meta}),
            };
            match handle_request(&State::new(), &Sessions::default(), &request) {
                Dispatch::Tool { modern, log_level, .. } => (modern, log_level),
                Dispatch::Reply(reply) => panic!("{reply:?}"),
            }
        };
        let modern = json!({"io.modelcontextprotocol/protocolVersion": MODERN});
        assert_eq!(call(modern.clone()), (true, None));
        let mut logged = modern;
        logged["io.modelcontextprotocol/logLevel"] = "info".into();
        assert_eq!(call(logged), (true, Some(1)));
        assert_eq!(call(json!({})), (false, None));
    }

    #[test]
    fn routes_methods() {
        assert_eq!(reply("ping", Value::Null).unwrap(), json!({}));
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
