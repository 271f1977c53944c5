//! JSON-RPC 2.0 messages as MCP uses them over stdio: one message per line.
//!
//! This module owns the wire shapes (requests, notifications, responses, error codes) and the
//! parsing of one line into a [`Message`]. It does no I/O: `stdio.rs` reads and writes lines, and
//! the server decides what a message means.

use std::collections::HashMap;

use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

/// Invalid JSON was received (JSON-RPC 2.0, section 5.1).
pub(crate) const PARSE_ERROR: i64 = -32700;
/// The JSON sent is not a valid request object.
pub(crate) const INVALID_REQUEST: i64 = -32600;
/// The method does not exist.
pub(crate) const METHOD_NOT_FOUND: i64 = -32601;
/// Invalid method parameters; MCP also uses it for an unknown tool name.
pub(crate) const INVALID_PARAMS: i64 = -32602;
/// Internal error.
pub(crate) const INTERNAL_ERROR: i64 = -32603;

/// A request id, kept as the exact JSON text the client sent: JSON-RPC requires the response
/// to echo it with its type (a string stays a string, an integer stays an integer), and an
/// integer too large for a 64-bit number (`123456789012345678901234567890`) must come back
/// digit for digit, not as the float serde_json reads it as.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct RequestId {
    value: Value,
    /// The id's JSON text as it appeared in the request.
    text: String,
}

impl RequestId {
    /// A stable key for maps of requests in flight (`1` and `"1"` are different ids). It is
    /// the id as parsed, so that the `requestId` of a cancellation, parsed the same way,
    /// finds it.
    pub(crate) fn key(&self) -> String {
        self.value.to_string()
    }

    /// The id from its parsed value; `line` is read again for the exact text of a number
    /// that a 64-bit integer cannot hold.
    fn read(value: Value, line: &[u8]) -> RequestId {
        let exact = value.as_number().is_none_or(|n| n.is_i64() || n.is_u64());
        let text = match exact {
            true => None,
            false => serde_json::from_slice::<HashMap<String, Box<RawValue>>>(line)
                .ok()
                .and_then(|mut members| members.remove("id"))
                .map(|raw| raw.get().to_string()),
        };
        let text = text.unwrap_or_else(|| value.to_string());
        RequestId { value, text }
    }

    pub(crate) fn from_value(value: Value) -> RequestId {
        RequestId { text: value.to_string(), value }
    }

    /// The id when it is a string.
    pub(crate) fn as_str(&self) -> Option<&str> {
        self.value.as_str()
    }
}

#[derive(Debug)]
pub(crate) enum Message {
    Request(Request),
    Notification(Notification),
    Response(Response),
}

#[derive(Debug)]
pub(crate) struct Request {
    pub(crate) id: RequestId,
    pub(crate) method: String,
    pub(crate) params: Value,
}

#[derive(Debug, Clone)]
pub(crate) struct Notification {
    pub(crate) method: String,
    pub(crate) params: Value,
}

/// A response; `id` is `None` only for errors about a message whose id could not be read.
#[derive(Debug)]
pub(crate) struct Response {
    pub(crate) id: Option<RequestId>,
    pub(crate) result: Result<Json, Error>,
}

/// Serialised JSON text. Results are kept as text so a large tool answer is written out once,
/// not cloned into a `Value` tree per layer (a 10,000-hit answer would otherwise cost tens of
/// MiB of short-lived maps).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Json(String);

impl Json {
    /// Text the caller produced with a JSON serialiser (or checked by parsing it).
    pub(crate) fn from_serialized(text: String) -> Json {
        Json(text)
    }

    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }
}

impl From<&Value> for Json {
    fn from(value: &Value) -> Json {
        Json(value.to_string())
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Error {
    pub(crate) code: i64,
    pub(crate) message: String,
    pub(crate) data: Option<Value>,
}

impl Error {
    pub(crate) fn new(code: i64, message: impl Into<String>) -> Error {
        Error { code, message: message.into(), data: None }
    }

    pub(crate) fn with_data(code: i64, message: impl Into<String>, data: Value) -> Error {
        Error { code, message: message.into(), data: Some(data) }
    }
}

impl Response {
    #[cfg(test)]
    pub(crate) fn ok(id: RequestId, result: &Value) -> Response {
        Response { id: Some(id), result: Ok(Json::from(result)) }
    }

    pub(crate) fn ok_json(id: RequestId, result: Json) -> Response {
        Response { id: Some(id), result: Ok(result) }
    }

    pub(crate) fn err(id: Option<RequestId>, code: i64, message: impl Into<String>) -> Response {
        Response { id, result: Err(Error::new(code, message)) }
    }
}

impl Notification {
    pub(crate) fn new(method: &str, params: Value) -> Notification {
        Notification { method: method.to_string(), params }
    }
}

impl Message {
    /// Serialises the message as one line of JSON without the trailing newline. serde_json never
    /// emits a raw newline (they are escaped inside strings), so the line stays one line.
    pub(crate) fn to_line(&self) -> String {
        let value = match self {
            Message::Request(r) => {
                let rest = json!({"method": r.method, "params": r.params}).to_string();
                return format!(r#"{{"jsonrpc":"2.0","id":{},{}"#, r.id.text, &rest[1..]);
            }
            Message::Notification(n) => {
                let mut object = Map::new();
                object.insert("jsonrpc".into(), "2.0".into());
                object.insert("method".into(), n.method.clone().into());
                if !n.params.is_null() {
                    object.insert("params".into(), n.params.clone());
                }
                Value::Object(object)
            }
            Message::Response(r) => {
                let id = r.id.as_ref().map_or("null", |id| id.text.as_str());
                let head = format!(r#"{{"jsonrpc":"2.0","id":{id},"#);
                let body = match &r.result {
                    Ok(result) => format!(r#""result":{}}}"#, result.0),
                    Err(e) => {
                        let mut error = json!({"code": e.code, "message": e.message});
                        if let Some(data) = &e.data {
                            error["data"] = data.clone();
                        }
                        format!(r#""error":{error}}}"#)
                    }
                };
                return head + &body;
            }
        };
        value.to_string()
    }
}

impl From<Response> for Message {
    fn from(response: Response) -> Message {
        Message::Response(response)
    }
}

impl From<Notification> for Message {
    fn from(notification: Notification) -> Message {
        Message::Notification(notification)
    }
}

/// Parses one line. An error comes back as the response to send: -32700 for bytes that are not
/// JSON (invalid UTF-8 included), -32600 for JSON that is not a single valid message.
pub(crate) fn parse(line: &[u8]) -> Result<Message, Response> {
    let value: Value = serde_json::from_slice(line)
        .map_err(|e| Response::err(None, PARSE_ERROR, format!("parse error: {e}")))?;
    let Value::Object(mut object) = value else {
        let what = if value.is_array() {
            "batches are not supported: send one JSON-RPC message per line"
        } else {
            "a JSON-RPC message must be a JSON object"
        };
        return Err(Response::err(None, INVALID_REQUEST, what));
    };
    let id = match object.remove("id") {
        None => None,
        Some(id @ (Value::String(_) | Value::Number(_))) => Some(RequestId::read(id, line)),
        Some(_) => {
            return Err(Response::err(
                None,
                INVALID_REQUEST,
                "the request id must be a string or a number",
            ))
        }
    };
    let invalid = |id: Option<RequestId>, what: &str| Err(Response::err(id, INVALID_REQUEST, what));
    if object.get("jsonrpc") != Some(&Value::String("2.0".into())) {
        return invalid(id, "the \"jsonrpc\" member must be exactly \"2.0\"");
    }
    let params = object.remove("params").unwrap_or(Value::Null);
    if !(params.is_null() || params.is_object() || params.is_array()) {
        return invalid(id, "\"params\" must be an object or an array");
    }
    match (object.remove("method"), id) {
        (Some(Value::String(method)), Some(id)) => {
            Ok(Message::Request(Request { id, method, params }))
        }
        (Some(Value::String(method)), None) => {
            Ok(Message::Notification(Notification { method, params }))
        }
        (Some(_), id) => invalid(id, "\"method\" must be a string"),
        (None, Some(id)) if object.contains_key("result") || object.contains_key("error") => {
            let result = match object.remove("error") {
                Some(error) => Err(Error::new(
                    error.get("code").and_then(Value::as_i64).unwrap_or(INTERNAL_ERROR),
                    error.get("message").and_then(Value::as_str).unwrap_or_default(),
                )),
                None => Ok(Json::from(&object.remove("result").unwrap_or(Value::Null))),
            };
            Ok(Message::Response(Response { id: Some(id), result }))
        }
        (None, id) => invalid(id, "a JSON-RPC message needs a \"method\""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Parses `input` and renders what came out in a short form, so a table can hold the cases.
    fn check(input: &str, expected: &str) {
        let got = match parse(input.as_bytes()) {
            Ok(Message::Request(r)) => format!("request {} {}", r.id.key(), r.method),
            Ok(Message::Notification(n)) => format!("notification {}", n.method),
            Ok(Message::Response(r)) => format!("response {}", r.id.map(|i| i.key()).unwrap()),
            Err(r) => format!(
                "error {} id={}",
                r.result.unwrap_err().code,
                r.id.map_or("null".into(), |i| i.key())
            ),
        };
        assert_eq!(got, expected, "input: {input}");
    }

    #[test]
    fn parses_lines() {
        check(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#, "request 1 ping");
        check(r#"{"jsonrpc":"2.0","id":"a","method":"ping"}"#, r#"request "a" ping"#);
        check(r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#, "request 1.5 ping");
        check(
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            "notification notifications/initialized",
        );
        check(r#"{"jsonrpc":"2.0","id":7,"result":{}}"#, "response 7");
        check("{not json", "error -32700 id=null");
        check("\u{1}", "error -32700 id=null");
        check(r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#, "error -32600 id=null");
        check(r#""hello""#, "error -32600 id=null");
        check(r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#, "error -32600 id=null");
        check(r#"{"jsonrpc":"2.0","id":{},"method":"ping"}"#, "error -32600 id=null");
        check(r#"{"jsonrpc":"1.0","id":3,"method":"ping"}"#, "error -32600 id=3");
        check(r#"{"id":3,"method":"ping"}"#, "error -32600 id=3");
        check(r#"{"jsonrpc":"2.0","id":4,"method":5}"#, "error -32600 id=4");
        check(r#"{"jsonrpc":"2.0","id":4}"#, "error -32600 id=4");
        check(r#"{"jsonrpc":"2.0","id":4,"method":"x","params":3}"#, "error -32600 id=4");
    }

    #[test]
    fn ids_come_back_exactly_as_sent() {
        for id in [
            "123456789012345678901234567890",
            "-9223372036854775809",
            "1.5",
            "1e3",
            "7",
            r#""a\"b""#,
        ] {
            let line = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#);
            let Ok(Message::Request(request)) = parse(line.as_bytes()) else { panic!("{line}") };
            let answer = Message::from(Response::ok(request.id, &json!({}))).to_line();
            assert_eq!(answer, format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#));
        }
        // Its key is the parsed value's, as a cancellation's `requestId` reads.
        let line = br#"{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"x"}"#;
        let Ok(Message::Request(request)) = parse(line) else { panic!() };
        assert_eq!(request.id.key(), json!(123456789012345678901234567890.0).to_string());
    }

    #[test]
    fn invalid_utf8_is_a_parse_error() {
        let err = parse(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\"}").unwrap_err();
        assert_eq!(err.result.unwrap_err().code, PARSE_ERROR);
    }

    #[test]
    fn responses_echo_the_id_type() {
        let line =
            Message::from(Response::ok(RequestId::from_value(json!("7")), &json!({}))).to_line();
        assert_eq!(line, r#"{"jsonrpc":"2.0","id":"7","result":{}}"#);
        let line = Message::from(Response::ok(RequestId::from_value(json!(7)), &json!({"a": [1]})))
            .to_line();
        assert_eq!(line, r#"{"jsonrpc":"2.0","id":7,"result":{"a":[1]}}"#);
        let line = Message::from(Response::err(None, PARSE_ERROR, "bad")).to_line();
        assert_eq!(line, r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"bad"}}"#);
    }
}
