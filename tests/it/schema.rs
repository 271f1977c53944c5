//! Every tool answer checked against its tool's own `outputSchema`, as validating clients (the
//! official Python SDK among them) check it: one field that drifts from its schema makes such a
//! client reject the whole answer.
//!
//! The schemas come from the binary's own `tools/list`, read once. The validator knows the
//! JSON Schema keywords debug-mcp's schemas use, and fails on any other, so a schema cannot
//! grow a keyword that these checks would silently skip (`tests/clients/python_sdk.py` runs
//! the real `jsonschema` on the same schemas).

use std::collections::HashMap;
use std::sync::OnceLock;

use serde_json::{json, Value};

/// Each tool's output schema, by name, from the server's `tools/list`.
fn schemas() -> &'static HashMap<String, Value> {
    static SCHEMAS: OnceLock<HashMap<String, Value>> = OnceLock::new();
    SCHEMAS.get_or_init(|| {
        let mut server = crate::Server::initialized();
        let tools = server.request("tools/list", json!({}))["result"]["tools"].clone();
        let tools = tools.as_array().expect("tools/list answers a list");
        let mut schemas: HashMap<String, Value> = tools
            .iter()
            .map(|t| (t["name"].as_str().unwrap().to_string(), t["outputSchema"].clone()))
            .collect();
        // Former names (`debug-step`) are not listed: no client has their schema.
        for former in FORMER {
            schemas.insert(former.to_string(), json!({"type": "object"}));
        }
        schemas
    })
}

/// Tools called by a former name (not listed; they answer any object).
const FORMER: &[&str] = &[
    "debug-set-breakpoint",
    "debug-remove-breakpoint",
    "debug-list-breakpoints",
    "debug-step",
    "debug-pause",
    "debug-pause-on-exceptions",
    "debug-threads",
    "debug-set-variable",
    "debug-scripts",
    "debug-attach",
];

/// Fails unless `structured` validates against tool `name`'s output schema.
pub fn check(name: &str, structured: &Value) {
    let schema = schemas()
        .get(name)
        .unwrap_or_else(|| panic!("no output schema for tool {name}: add it to schema::FORMER"));
    if let Err(why) = validate(schema, structured, "") {
        panic!(
            "the answer of {name} does not validate against its outputSchema: {why}\n{structured}"
        );
    }
}

/// Checks `value` against `schema` at `path` (for the message).
fn validate(schema: &Value, value: &Value, path: &str) -> Result<(), String> {
    let schema = schema.as_object().ok_or_else(|| format!("{path}: schema is not an object"))?;
    for (keyword, rule) in schema {
        match keyword.as_str() {
            "description" | "title" => {}
            "type" => {
                let types: Vec<&str> = match rule {
                    Value::String(t) => vec![t],
                    Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
                    _ => return Err(format!("{path}: bad type keyword {rule}")),
                };
                if !types.iter().any(|t| is_type(value, t)) {
                    return Err(format!("{path}: {value} is not of type {rule}"));
                }
            }
            "properties" => {
                let (Some(object), Some(properties)) = (value.as_object(), rule.as_object()) else {
                    continue;
                };
                for (name, property) in properties {
                    if let Some(field) = object.get(name) {
                        validate(property, field, &format!("{path}/{name}"))?;
                    }
                }
            }
            "additionalProperties" => {
                let (Some(object), Some(properties)) = (value.as_object(), schema.get("properties"))
                else {
                    continue;
                };
                for (name, field) in object {
                    if properties.get(name).is_none() {
                        match rule {
                            Value::Bool(false) => {
                                return Err(format!("{path}: {name} is not allowed"))
                            }
                            Value::Bool(true) => {}
                            rule => validate(rule, field, &format!("{path}/{name}"))?,
                        }
                    }
                }
            }
            "required" => {
                let Some(object) = value.as_object() else { continue };
                for name in rule.as_array().into_iter().flatten().filter_map(Value::as_str) {
                    if !object.contains_key(name) {
                        return Err(format!("{path}: '{name}' is a required property"));
                    }
                }
            }
            "items" => {
                for (i, item) in value.as_array().into_iter().flatten().enumerate() {
                    validate(rule, item, &format!("{path}/{i}"))?;
                }
            }
            "minItems" => {
                let (Some(items), Some(min)) = (value.as_array(), rule.as_u64()) else { continue };
                if (items.len() as u64) < min {
                    return Err(format!("{path}: fewer than {min} items"));
                }
            }
            "anyOf" => {
                let options = rule.as_array().ok_or_else(|| format!("{path}: bad anyOf"))?;
                let whys: Vec<String> = options
                    .iter()
                    .filter_map(|option| validate(option, value, path).err())
                    .collect();
                if whys.len() == options.len() {
                    return Err(format!("{path}: none of anyOf holds ({})", whys.join("; ")));
                }
            }
            "enum" => {
                if !rule.as_array().is_some_and(|options| options.contains(value)) {
                    return Err(format!("{path}: {value} is not one of {rule}"));
                }
            }
            "minimum" | "maximum" => {
                let (Some(n), Some(bound)) = (value.as_f64(), rule.as_f64()) else { continue };
                if (keyword == "minimum" && n < bound) || (keyword == "maximum" && n > bound) {
                    return Err(format!("{path}: {n} is beyond the {keyword} {bound}"));
                }
            }
            other => return Err(format!("{path}: the schema keyword `{other}` is not checked here: teach tests/it/schema.rs")),
        }
    }
    Ok(())
}

fn is_type(value: &Value, kind: &str) -> bool {
    match kind {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "boolean" => value.is_boolean(),
        "null" => value.is_null(),
        "number" => value.is_number(),
        // JSON Schema: 1.0 is an integer too.
        "integer" => {
            value.is_i64() || value.is_u64() || value.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        _ => false,
    }
}

#[test]
fn the_validator_rejects_what_jsonschema_rejects() {
    let schema = json!({"type": "object", "properties": {
        "results": {"type": "array", "items": {"type": "object",
            "properties": {"type": {"type": "string"}, "probe": {"type": "integer"}},
            "required": ["type", "value"]}},
        "state": {"type": "string", "enum": ["paused", "exited"]}},
        "anyOf": [{"required": ["results"]}, {"required": ["error"]}]});
    for (value, valid) in [
        (json!({"results": []}), true),
        (json!({"error": "x"}), true),
        (json!({}), false),
        (json!({"results": [{"type": "int", "value": 1}]}), true),
        (json!({"results": [{"probe": 0, "locals": {}}]}), false),
        (json!({"results": [{"type": 3, "value": 1}]}), false),
        (json!({"results": [], "state": "running"}), false),
        (json!({"results": [{"type": "x", "value": 1, "probe": 1.0}]}), true),
        (json!({"results": [{"type": "x", "value": 1, "probe": 1.5}]}), false),
    ] {
        assert_eq!(validate(&schema, &value, "").is_ok(), valid, "{value}");
    }
    assert!(validate(&json!({"oneOf": []}), &json!({}), "").is_err());
}
