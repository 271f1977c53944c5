//! Short, readable previews of V8 values for `locals`, `debug-variables` and console messages,
//! in the style of Node's `util.inspect`: `{name: 'pen', price: 10}`, `Array(3) [1, 2, 3]`,
//! `Map(2) {'a' => 1, 'b' => 2}`, `Order {id: 7}`, `[Function: total]`. They are built from the
//! `preview` V8 attaches to a RemoteObject (`generatePreview`: a few properties, then
//! `overflow`), never from a function's source.

use serde_json::Value;

use crate::debugger::limits::clip;
use crate::debugger::limits::VALUE_MAX;

/// Items of an array shown before `…` (V8 previews up to 100).
const MAX_ITEMS: usize = 10;

/// `(type, value)` of a RemoteObject: the type as V8 names it (`number`, `object`, `array`,
/// `map`...), and the value itself for a primitive or a preview text for anything else.
pub(crate) fn compact(remote: &Value) -> (String, Value) {
    let kind = match (remote["type"].as_str(), remote["subtype"].as_str()) {
        (Some("object"), Some("null")) => "object",
        (Some("object"), Some(sub)) => sub,
        (Some(kind), _) => kind,
        _ => "undefined",
    };
    let value = if let Some(text) = remote["unserializableValue"].as_str() {
        text.into()
    } else if let Some(v) =
        remote.get("value").filter(|_| kind != "object" || remote["subtype"] == "null")
    {
        match v {
            Value::String(s) => clip(s, VALUE_MAX).into(),
            other => other.clone(),
        }
    } else if kind == "undefined" {
        Value::Null
    } else {
        clip(&text(remote), VALUE_MAX).into()
    };
    (kind.into(), value)
}

/// A non-primitive RemoteObject as one line of text.
pub(crate) fn text(remote: &Value) -> String {
    let description = remote["description"].as_str().unwrap_or_default();
    if remote["type"] == "function" {
        return function(description);
    }
    match remote.get("preview") {
        Some(preview) => object(preview),
        None => first_line(description).to_string(),
    }
}

/// `[Function: name]` (or `[class Name]`) from a function's description, which is its source.
fn function(source: &str) -> String {
    let source = source.trim_start();
    if let Some(rest) = source.strip_prefix("class") {
        let name: String = rest.trim_start().chars().take_while(|c| is_name(*c)).collect();
        return match name.as_str() {
            "" | "extends" => "[class (anonymous)]".into(),
            name => format!("[class {name}]"),
        };
    }
    let rest = source.strip_prefix("async").map_or(source, str::trim_start);
    let name: String = match rest.strip_prefix("function") {
        Some(rest) => {
            rest.trim_start_matches(['*', ' ']).chars().take_while(|c| is_name(*c)).collect()
        }
        // A method (`total(a) {`) names itself before its parameters; an arrow does not.
        None => {
            let name: String = rest.chars().take_while(|c| is_name(*c)).collect();
            match rest[name.len()..].trim_start().starts_with('(') {
                true => name,
                false => String::new(),
            }
        }
    };
    match name.as_str() {
        "" => "[Function (anonymous)]".into(),
        name => format!("[Function: {name}]"),
    }
}

fn is_name(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '$'
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default()
}

/// An ObjectPreview as text.
fn object(preview: &Value) -> String {
    let description = preview["description"].as_str().unwrap_or_default();
    let more = |shown: bool| match (preview["overflow"] == true, shown) {
        (true, true) => ", …",
        (true, false) => "…",
        _ => "",
    };
    let properties = preview["properties"].as_array().map(Vec::as_slice).unwrap_or_default();
    match preview["subtype"].as_str() {
        Some("array" | "typedarray") => {
            let items: Vec<String> =
                properties.iter().take(MAX_ITEMS).map(property_value).collect();
            let cut = properties.len() > MAX_ITEMS && preview["overflow"] != true;
            let rest = if cut { ", …" } else { more(!items.is_empty()) };
            format!("{description} [{}{rest}]", items.join(", "))
        }
        Some("map") => {
            let entries: Vec<String> = entries(preview)
                .map(|e| format!("{} => {}", nested(&e["key"]), nested(&e["value"])))
                .collect();
            format!("{description} {{{}{}}}", entries.join(", "), more(!entries.is_empty()))
        }
        Some("set") => {
            let entries: Vec<String> = entries(preview).map(|e| nested(&e["value"])).collect();
            format!("{description} {{{}{}}}", entries.join(", "), more(!entries.is_empty()))
        }
        Some("error") => first_line(description).to_string(),
        // One entry of a Map (`key => value`) or a Set (`value`).
        Some("internal#entry") => {
            let part =
                |name: &str| properties.iter().find(|p| p["name"] == name).map(property_value);
            match (part("key"), part("value")) {
                (Some(key), Some(value)) => format!("{key} => {value}"),
                (None, Some(value)) => value,
                _ => description.to_string(),
            }
        }
        Some(_) => description.to_string(),
        None => {
            let fields: Vec<String> = properties
                .iter()
                .map(|p| {
                    format!("{}: {}", p["name"].as_str().unwrap_or_default(), property_value(p))
                })
                .collect();
            let body = format!("{{{}{}}}", fields.join(", "), more(!fields.is_empty()));
            match description {
                "Object" | "" => body,
                class => format!("{class} {body}"),
            }
        }
    }
}

fn entries(preview: &Value) -> impl Iterator<Item = &Value> {
    preview["entries"].as_array().into_iter().flatten()
}

/// A PropertyPreview's value: strings quoted, objects by their own preview when V8 gave one
/// (a Map entry's value), else by their short description.
fn property_value(property: &Value) -> String {
    let value = property["value"].as_str().unwrap_or_default();
    if let Some(inner) = property.get("valuePreview") {
        return object(inner);
    }
    match property["type"].as_str() {
        Some("string") => quote(value),
        Some("function") => "[Function]".into(),
        Some("undefined") => "undefined".into(),
        _ => value.to_string(),
    }
}

/// A nested ObjectPreview (a Map's key or value): primitives as themselves, objects by their
/// description.
fn nested(preview: &Value) -> String {
    let description = preview["description"].as_str().unwrap_or_default();
    match preview["type"].as_str() {
        Some("string") => quote(description),
        Some("function") => "[Function]".into(),
        Some("object") if preview["subtype"].is_null() && !description.is_empty() => {
            if preview["properties"].as_array().is_some_and(|p| !p.is_empty()) {
                object(preview)
            } else {
                description.to_string()
            }
        }
        _ => description.to_string(),
    }
}

fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\\', "\\\\").replace('\'', "\\'"))
}

/// One console argument as text: strings as they are, other values as JSON, objects and
/// functions by their preview.
pub(crate) fn console_text(arg: &Value) -> String {
    match arg.get("value") {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None if arg["type"] == "undefined" => "undefined".into(),
        None => match arg["unserializableValue"].as_str() {
            Some(text) => text.to_string(),
            None => crate::cdp::preview::text(arg),
        },
    }
}

/// A console call (`Runtime.consoleAPICalled`) or an uncaught error (`Runtime.exceptionThrown`)
/// as `(type, text)`: `log`, `error`, `warn`... and the arguments as console shows them.
pub(crate) fn console_entry(event: &crate::cdp::Event) -> Option<(String, String)> {
    let params = &event.params;
    match event.method.as_str() {
        "Runtime.consoleAPICalled" => {
            let text: Vec<String> =
                params["args"].as_array().map(|args| args.iter().map(console_text).collect())?;
            let kind = params["type"].as_str().unwrap_or("log").to_string();
            Some((kind, text.join(" ")))
        }
        "Runtime.exceptionThrown" => {
            let details = &params["exceptionDetails"];
            let text = details
                .pointer("/exception/description")
                .and_then(Value::as_str)
                .or_else(|| details["text"].as_str())
                .unwrap_or("Uncaught error");
            let text = match text.starts_with("Uncaught") {
                true => text.to_string(),
                false => format!("Uncaught {text}"),
            };
            Some(("error".into(), text))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn functions_by_name_never_by_source() {
        for (source, expected) in [
            ("function named(a) { return a; }", "[Function: named]"),
            ("async function load() {}", "[Function: load]"),
            ("function* gen() {}", "[Function: gen]"),
            ("(x) => x", "[Function (anonymous)]"),
            ("x => x", "[Function (anonymous)]"),
            ("total(a) { return a }", "[Function: total]"),
            ("class Order { constructor() {} }", "[class Order]"),
            ("class extends Base {}", "[class (anonymous)]"),
            ("function (a) {}", "[Function (anonymous)]"),
        ] {
            assert_eq!(function(source), expected, "{source}");
        }
    }

    #[test]
    fn objects_arrays_maps_and_sets_preview_their_contents() {
        let prop = |name: &str, kind: &str, value: &str| json!({"name": name, "type": kind, "value": value});
        let object = json!({"type": "object", "description": "Object", "overflow": false,
            "properties": [prop("name", "string", "pen"), prop("price", "number", "10"),
                           prop("nested", "object", "Object")]});
        assert_eq!(super::object(&object), "{name: 'pen', price: 10, nested: Object}");
        let instance = json!({"type": "object", "description": "Order", "overflow": true,
            "properties": [prop("id", "number", "7")]});
        assert_eq!(super::object(&instance), "Order {id: 7, …}");
        let array = json!({"type": "object", "subtype": "array", "description": "Array(3)",
            "overflow": false, "properties": [prop("0", "number", "1"), prop("1", "string", "x"),
            prop("2", "object", "Array(2)")]});
        assert_eq!(super::object(&array), "Array(3) [1, 'x', Array(2)]");
        let primitive = |kind: &str, text: &str| json!({"type": kind, "description": text});
        let map = json!({"type": "object", "subtype": "map", "description": "Map(2)",
            "overflow": true, "entries": [{"key": primitive("string", "a"), "value": primitive("number", "1")}]});
        assert_eq!(super::object(&map), "Map(2) {'a' => 1, …}");
        let set = json!({"type": "object", "subtype": "set", "description": "Set(1)",
            "overflow": false, "entries": [{"value": primitive("string", "it's")}]});
        assert_eq!(super::object(&set), "Set(1) {'it\\'s'}");
        let empty =
            json!({"type": "object", "description": "Object", "overflow": false, "properties": []});
        assert_eq!(super::object(&empty), "{}");
    }

    #[test]
    fn compact_keeps_primitives_typed() {
        assert_eq!(
            compact(&json!({"type": "number", "value": 1.5})),
            ("number".into(), json!(1.5))
        );
        assert_eq!(compact(&json!({"type": "undefined"})), ("undefined".into(), Value::Null));
        assert_eq!(
            compact(&json!({"type": "object", "subtype": "null", "value": null})),
            ("object".into(), Value::Null)
        );
        assert_eq!(
            compact(&json!({"type": "bigint", "unserializableValue": "10n", "description": "10n"})),
            ("bigint".into(), json!("10n"))
        );
        let error =
            json!({"type": "object", "subtype": "error", "description": "Error: boom\n    at x"});
        assert_eq!(compact(&error), ("error".into(), json!("Error: boom")));
    }
}
