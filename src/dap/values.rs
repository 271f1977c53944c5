//! Short previews of a debug adapter's variables, for failures' and probes' locals and a
//! session's: what the value holds where the adapter's text only points at it. A reference or
//! a `Box` shows its pointee, a structure its fields (`Version {major: 1, minor: 3, …}`), a
//! `Vec`, slice or map its first items (`["a", "b", "c"]`), an `Rc`/`Arc` what it holds; one
//! level down, at most a few more `variables` requests each. The flavour says which texts hide
//! their value ([`Flavour::opaque`]); others are kept as the adapter wrote them.

use serde_json::Value;

use crate::dap::flavour::{Flavour, Opaque};

/// Items or fields shown of one value; `children` is asked for one more, to know there are.
pub(crate) const SHOWN: usize = 8;

/// A variable's preview: its text, or, where the flavour says the text hides the value, what
/// `children` (the adapter's `variables` of a reference) shows one level down.
pub(crate) fn preview<F: Flavour>(
    flavour: &F,
    variable: &Value,
    children: &mut dyn FnMut(&Value) -> Vec<Value>,
) -> String {
    let (kind, text) = kind_and_text(variable);
    let Some(opaque) = flavour.opaque(kind, text).filter(|_| expandable(variable)) else {
        return plain(flavour, kind, without_address(text));
    };
    let listed = children(&variable["variablesReference"]);
    match opaque {
        Opaque::Pointer | Opaque::Shared => pointee(flavour, kind, text, &listed, children),
        // A smart pointer lldb sums up by its type: its one member is the pointer.
        Opaque::Members => match listed.as_slice() {
            [one]
                if flavour.opaque(kind_and_text(one).0, kind_and_text(one).1)
                    == Some(Opaque::Pointer) =>
            {
                let inner = children(&one["variablesReference"]);
                pointee(flavour, kind_and_text(one).0, text, &inner, children)
            }
            _ => members(flavour, kind, &listed),
        },
        Opaque::Items => items(flavour, text, &listed, children),
    }
}

/// lldb's text of a reference whose value has a summary, `0x00007ff… Ok(Partial)`: the value
/// says what the address does not.
fn without_address(text: &str) -> &str {
    match text.split_once(' ') {
        Some((address, rest))
            if address.len() > 2
                && address
                    .strip_prefix("0x")
                    .is_some_and(|h| h.bytes().all(|b| b.is_ascii_hexdigit()))
                && !rest.starts_with(['"', '\'', '(', '<']) =>
        {
            rest
        }
        _ => text,
    }
}

fn expandable(variable: &Value) -> bool {
    variable["variablesReference"].as_i64().is_some_and(|r| r > 0)
}

/// What a pointer (`kind`, `text`) points at, from its `listed` children: its one child (or the
/// one that holds the value: an `Rc`'s `value`, a smart pointer's `pointer`), followed once more
/// when that too is an address; lldb lists a pointer to a structure as the structure's members.
fn pointee<F: Flavour>(
    flavour: &F,
    kind: &str,
    text: &str,
    listed: &[Value],
    children: &mut dyn FnMut(&Value) -> Vec<Value>,
) -> String {
    let inner = match listed {
        [one] => Some(one),
        many => many
            .iter()
            .find(|c| matches!(c["name"].as_str(), Some("value" | "data" | "pointer" | "_M_ptr"))),
    };
    let Some(inner) = inner else {
        return match listed.is_empty() {
            true => text.to_string(),
            false => members(flavour, kind, listed),
        };
    };
    let (inner_kind, inner_text) = kind_and_text(inner);
    match flavour.opaque(inner_kind, inner_text) {
        Some(Opaque::Pointer) if expandable(inner) => {
            let listed = children(&inner["variablesReference"]);
            match listed.as_slice() {
                [] => inner_text.to_string(),
                [one] => one_level(flavour, one, children),
                many => members(flavour, inner_kind, many),
            }
        }
        _ => one_level(flavour, inner, children),
    }
}

/// A value one level down: a structure's fields or a sequence's items, but no further pointer
/// followed.
fn one_level<F: Flavour>(
    flavour: &F,
    variable: &Value,
    children: &mut dyn FnMut(&Value) -> Vec<Value>,
) -> String {
    let (kind, text) = kind_and_text(variable);
    match flavour.opaque(kind, text).filter(|_| expandable(variable)) {
        Some(Opaque::Members) => members(flavour, kind, &children(&variable["variablesReference"])),
        Some(Opaque::Items) => {
            let listed = children(&variable["variablesReference"]);
            items(flavour, text, &listed, children)
        }
        _ => without_address(text).to_string(),
    }
}

fn kind_and_text(variable: &Value) -> (&str, &str) {
    let kind = variable["type"].as_str().unwrap_or_default();
    let text = variable["value"].as_str().or(variable["result"].as_str()).unwrap_or_default();
    (kind, text)
}

/// A member's or an item's own text, `{…}` where that too only points at its value.
fn shown<F: Flavour>(flavour: &F, member: &Value) -> String {
    let (kind, text) = kind_and_text(member);
    match flavour.opaque(kind, text) {
        Some(Opaque::Members) => "{…}".to_string(),
        _ => plain(flavour, kind, text),
    }
}

/// A value's text as is, but a character that is a number in the program's language (Rust's
/// `u8`, which lldb prints as C's `unsigned char`).
fn plain<F: Flavour>(flavour: &F, kind: &str, text: &str) -> String {
    match text.starts_with('\'').then(|| flavour.value(kind, text)) {
        Some(Value::Number(number)) => number.to_string(),
        _ => text.to_string(),
    }
}

/// `Version {major: 1, minor: 3, patch: 3, pre: None}`: the type's own name and its fields.
fn members<F: Flavour>(flavour: &F, kind: &str, listed: &[Value]) -> String {
    // A Rust `&str` as its raw parts: the text its pointer starts, cut at its length.
    if let [data, length] = listed {
        let length = length["value"].as_str().and_then(|l| l.parse::<usize>().ok());
        let text = data["value"].as_str().and_then(|t| t.split_once(" \"")).map(|(_, t)| t);
        if let (true, Some(length), Some(text)) = (data["name"] == "data_ptr", length, text) {
            let text: String = text.trim_end_matches('"').chars().take(length).collect();
            return format!("{:?}", text);
        }
    }
    // An array's members are its items (`[0]`, `[1]`).
    if !listed.is_empty()
        && listed.iter().all(|m| m["name"].as_str().is_some_and(|n| n.starts_with('[')))
    {
        let shown_items: Vec<String> =
            listed.iter().take(SHOWN).map(|i| shown(flavour, i)).collect();
        let more = if listed.len() > SHOWN { ", …" } else { "" };
        return format!("[{}{more}]", shown_items.join(", "));
    }
    let fields: Vec<String> = listed
        .iter()
        .take(SHOWN)
        .map(|m| format!("{}: {}", m["name"].as_str().unwrap_or_default(), shown(flavour, m)))
        .collect();
    let more = if listed.len() > SHOWN { ", …" } else { "" };
    format!("{} {{{}{more}}}", short_type(kind), fields.join(", "))
}

/// `["a", "b", "c"]`, and the length when not every item is shown: `[1, 2, …] (size=300)`;
/// items that are structures with their fields.
fn items<F: Flavour>(
    flavour: &F,
    text: &str,
    listed: &[Value],
    children: &mut dyn FnMut(&Value) -> Vec<Value>,
) -> String {
    let mut shown_items = Vec::new();
    // A C++ map's items are pairs: shown `key: value`, in braces.
    let mut pairs = true;
    for item in listed.iter().take(SHOWN) {
        let (kind, item_text) = kind_and_text(item);
        shown_items.push(match flavour.opaque(kind, item_text) {
            Some(Opaque::Members) if expandable(item) => {
                let fields = children(&item["variablesReference"]);
                match fields.as_slice() {
                    [key, value] if key["name"] == "first" && value["name"] == "second" => {
                        format!("{}: {}", shown(flavour, key), shown(flavour, value))
                    }
                    _ => {
                        pairs = false;
                        members(flavour, kind, &fields)
                    }
                }
            }
            _ => {
                pairs = false;
                shown(flavour, item)
            }
        });
    }
    let (open, close) = if pairs && !listed.is_empty() { ('{', '}') } else { ('[', ']') };
    match listed.len() > SHOWN {
        true => format!("{open}{}, …{close} ({text})", shown_items.join(", ")),
        false => format!("{open}{}{close}", shown_items.join(", ")),
    }
}

/// A type's own name without its path: `versions::Version` → `Version`,
/// `core::slice::iter::Iter<&str>` → `Iter<&str>`.
fn short_type(kind: &str) -> &str {
    let kind = kind.trim_end_matches(" *").trim_start_matches('&');
    // libstdc++'s `std::__shared_ptr<Point, …>::element_type`: the type pointed at.
    if let Some(pointer) = kind.strip_suffix("::element_type") {
        let argument = pointer.split_once('<').map(|(_, rest)| rest.split([',', '>']).next());
        if let Some(Some(argument)) = argument {
            return short_type(argument.trim());
        }
    }
    let generic = kind.find('<').unwrap_or(kind.len());
    let start = kind[..generic].rfind("::").map_or(0, |at| at + 2);
    &kind[start..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_types() {
        assert_eq!(short_type("versions::Version"), "Version");
        assert_eq!(short_type("core::slice::iter::Iter<&str>"), "Iter<&str>");
        assert_eq!(short_type("Point"), "Point");
        assert_eq!(short_type("rv::Version *"), "Version");
        assert_eq!(
            short_type("std::__shared_ptr<Point, __gnu_cxx::_S_atomic>::element_type *"),
            "Point"
        );
    }
}
