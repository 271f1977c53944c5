//! Java values as answers show them, `{type, value}`: primitives as numbers and booleans,
//! `String` as text, `null`, arrays as lists, boxed numbers as numbers, enums by name,
//! collections and maps by their contents, `Optional` by what it holds, classes of the JDK by
//! their `toString()`, other objects by their fields (one level down, capped).

use std::collections::HashMap;

use serde_json::{json, Map, Value as Json};

use super::vm::{self, Invoked, Vm};
use super::wire::{tag, Id, Value};

/// Elements of an array or collection, and fields of an object, shown at most.
const ITEMS: usize = 100;
/// Objects are shown by their fields this many levels down; deeper, by their type.
const DEPTH: usize = 2;

/// How a class's objects are shown.
#[derive(Debug, Clone, PartialEq)]
enum Kind {
    Boxed,
    Enum,
    Collection,
    Map,
    Optional,
    Throwable,
    /// A class of the JDK (`java.`, `javax.`, `jdk.`, `sun.`): its `toString()`.
    Library,
    /// A record or any other class: its fields.
    Fields,
}

/// What values of one VM are, kept across reads (a class's kind is found once).
#[derive(Default)]
pub(crate) struct Values {
    kinds: HashMap<Id, Kind>,
    /// No method of the program may run to show or evaluate a value (`calls` traces it).
    pub(crate) no_calls: bool,
}

/// One value being shown: the VM, the stopped thread that may run methods (`toString()`,
/// `toArray()`; 0: none may), and what is left of the character budget.
pub(crate) struct Show<'a> {
    pub(crate) vm: &'a mut Vm,
    pub(crate) values: &'a mut Values,
    pub(crate) thread: Id,
    pub(crate) budget: usize,
    pub(crate) truncated: bool,
}

impl Show<'_> {
    /// `{type, value, truncated?}`.
    pub(crate) fn typed(&mut self, value: &Value) -> Json {
        let kind = self.type_name(value);
        let shown = self.json(value, 0);
        let mut answer = json!({"type": kind, "value": shown});
        if self.truncated {
            answer["truncated"] = true.into();
        }
        answer
    }

    /// A short text of the value, as a failure's or a stop's locals show it.
    pub(crate) fn preview(&mut self, value: &Value) -> String {
        let shown = self.json(value, 1);
        match (value, &shown) {
            (Value::Object(tag::OBJECT, id), Json::Object(_)) if *id != 0 => {
                format!("{}{}", self.type_name(value), text(&shown))
            }
            _ => text(&shown),
        }
    }

    /// The value's Java type as answers name it (`int`, `String`, `ArrayList`, `Orders.Item`).
    pub(crate) fn type_name(&mut self, value: &Value) -> String {
        match value {
            Value::Void => "void".into(),
            Value::Boolean(_) => "boolean".into(),
            Value::Byte(_) => "byte".into(),
            Value::Char(_) => "char".into(),
            Value::Short(_) => "short".into(),
            Value::Int(_) => "int".into(),
            Value::Long(_) => "long".into(),
            Value::Float(_) => "float".into(),
            Value::Double(_) => "double".into(),
            Value::Object(_, 0) => "null".into(),
            Value::Object(_, id) => match self.vm.type_of(*id) {
                Ok(class) => vm::short_name(&self.vm.signature(class)),
                Err(_) => "object".into(),
            },
        }
    }

    fn spend(&mut self, n: usize) -> bool {
        if n > self.budget {
            self.truncated = true;
            self.budget = 0;
            return false;
        }
        self.budget -= n;
        true
    }

    fn string(&mut self, text: String) -> Json {
        let n = text.chars().count();
        if self.spend(n) {
            return text.into();
        }
        let kept: String = text.chars().take(self.budget.max(40)).collect();
        format!("{kept}… [truncated]").into()
    }

    pub(crate) fn json(&mut self, value: &Value, depth: usize) -> Json {
        self.spend(4);
        match *value {
            Value::Void => Json::Null,
            Value::Boolean(b) => b.into(),
            Value::Byte(n) => n.into(),
            Value::Short(n) => n.into(),
            Value::Int(n) => n.into(),
            Value::Long(n) => n.into(),
            Value::Char(c) => String::from_utf16_lossy(&[c]).into(),
            Value::Float(f) => number(f64::from(f)),
            Value::Double(f) => number(f),
            Value::Object(_, 0) => Json::Null,
            Value::Object(tag::STRING, id) => match self.vm.string(id) {
                Ok(text) => self.string(text),
                Err(e) => format!("<{e}>").into(),
            },
            Value::Object(tag::ARRAY, id) => self.array(id, depth),
            Value::Object(tag::THREAD, id) => format!("Thread[{}]", self.vm.thread_name(id)).into(),
            Value::Object(_, id) => self.object(id, depth),
        }
    }

    fn array(&mut self, id: Id, depth: usize) -> Json {
        let Ok(length) = self.vm.array_length(id) else { return "<collected>".into() };
        let shown = length.min(ITEMS);
        let items = self.vm.array_values(id, 0, shown).unwrap_or_default();
        self.list(&items, length, depth)
    }

    fn list(&mut self, items: &[Value], length: usize, depth: usize) -> Json {
        let mut list = Vec::with_capacity(items.len() + 1);
        for item in items {
            if self.budget == 0 {
                break;
            }
            // A list's items are shown as deep as the list itself.
            list.push(self.json(item, depth));
        }
        if length > list.len() {
            self.truncated = true;
            list.push(format!("… {} more", length - list.len()).into());
        }
        Json::Array(list)
    }

    fn kind(&mut self, class: Id) -> Kind {
        if let Some(kind) = self.values.kinds.get(&class) {
            return kind.clone();
        }
        let signature = self.vm.signature(class);
        let boxed = [
            "Ljava/lang/Integer;",
            "Ljava/lang/Long;",
            "Ljava/lang/Double;",
            "Ljava/lang/Float;",
            "Ljava/lang/Short;",
            "Ljava/lang/Byte;",
            "Ljava/lang/Boolean;",
            "Ljava/lang/Character;",
        ];
        let lineage: Vec<String> =
            self.vm.lineage(class).into_iter().map(|c| self.vm.signature(c)).collect();
        let kind = if boxed.contains(&signature.as_str()) {
            Kind::Boxed
        } else if lineage.iter().any(|s| s == "Ljava/lang/Enum;") {
            Kind::Enum
        } else if signature == "Ljava/util/Optional;" {
            Kind::Optional
        } else if lineage.iter().any(|s| s == "Ljava/lang/Throwable;") {
            Kind::Throwable
        } else if self.vm.is_a(class, "Ljava/util/Map;") {
            Kind::Map
        } else if self.vm.is_a(class, "Ljava/util/Collection;") {
            Kind::Collection
        } else if ["Ljava/", "Ljavax/", "Ljdk/", "Lsun/"].iter().any(|p| signature.starts_with(p)) {
            Kind::Library
        } else {
            Kind::Fields
        };
        self.values.kinds.insert(class, kind.clone());
        kind
    }

    fn object(&mut self, id: Id, depth: usize) -> Json {
        let Ok(class) = self.vm.type_of(id) else { return "<collected>".into() };
        let kind = self.kind(class);
        match kind {
            Kind::Boxed => {
                let value = self.vm.field_value(id, "value").unwrap_or(Value::Void);
                self.json(&value, depth)
            }
            Kind::Enum => match self.vm.field_value(id, "name") {
                Some(Value::Object(_, name)) => self.vm.string(name).unwrap_or_default().into(),
                _ => Json::Null,
            },
            Kind::Optional => match self.vm.field_value(id, "value") {
                Some(value) if !value.is_null() => {
                    let inner = self.json(&value, depth);
                    json!({"present": inner})
                }
                _ => json!({"empty": true}),
            },
            Kind::Throwable => {
                let (name, message) = self.vm.thrown(id);
                match message.is_empty() {
                    true => name.into(),
                    false => self.string(format!("{name}: {message}")),
                }
            }
            // Read from the JDK's own fields where it is known how; else listed by a call.
            Kind::Collection => match super::contents::elements(self.vm, id, ITEMS) {
                Some((items, length)) => self.list(&items, length, depth),
                None => match self.call(id, class, "toArray") {
                    Some(Value::Object(tag::ARRAY, array)) => self.array(array, depth),
                    _ => self.fields(id, class, depth),
                },
            },
            Kind::Map => match super::contents::entries(self.vm, id, ITEMS) {
                Some((entries, length)) => self.entries(entries, length, depth),
                None => self.map(id, class, depth),
            },
            Kind::Library if self.thread != 0 => match self.call(id, class, "toString") {
                Some(Value::Object(_, text)) if text != 0 => match self.vm.string(text) {
                    Ok(text) => self.string(text),
                    Err(_) => Json::Null,
                },
                _ => self.fields(id, class, depth),
            },
            _ if depth >= DEPTH => {
                let name = vm::short_name(&self.vm.signature(class));
                format!("{name}{{…}}").into()
            }
            _ => self.fields(id, class, depth),
        }
    }

    fn map(&mut self, id: Id, class: Id, depth: usize) -> Json {
        let arrays = |show: &mut Show, of: &str| -> Option<Id> {
            let view = show.call(id, class, of)?;
            let Value::Object(_, view) = view else { return None };
            let view_class = show.vm.type_of(view).ok()?;
            match show.call(view, view_class, "toArray")? {
                Value::Object(tag::ARRAY, array) => Some(array),
                _ => None,
            }
        };
        let (Some(keys), Some(values)) = (arrays(self, "keySet"), arrays(self, "values")) else {
            return self.fields(id, class, depth);
        };
        let length = self.vm.array_length(keys).unwrap_or(0);
        let shown = length.min(ITEMS);
        let keys = self.vm.array_values(keys, 0, shown).unwrap_or_default();
        let values = self.vm.array_values(values, 0, shown).unwrap_or_default();
        self.entries(keys.into_iter().zip(values).collect(), length, depth)
    }

    /// A map's entries as a JSON object, keys as text.
    fn entries(&mut self, entries: Vec<(Value, Value)>, length: usize, depth: usize) -> Json {
        let mut map = Map::new();
        for (key, value) in &entries {
            if self.budget == 0 {
                break;
            }
            let key = match self.json(key, depth) {
                Json::String(text) => text,
                other => other.to_string(),
            };
            let value = self.json(value, depth);
            map.insert(key, value);
        }
        if length > map.len() {
            self.truncated = true;
            map.insert("…".into(), format!("{} more", length - map.len()).into());
        }
        Json::Object(map)
    }

    fn fields(&mut self, id: Id, class: Id, depth: usize) -> Json {
        let mut fields = Vec::new();
        for at in self.vm.lineage(class).into_iter().rev() {
            fields.extend(
                self.vm.fields(at).into_iter().filter(|f| !f.is_static() && !f.is_synthetic()),
            );
        }
        let ids: Vec<Id> = fields.iter().take(ITEMS).map(|f| f.id).collect();
        let values = self.vm.object_values(id, &ids).unwrap_or_default();
        let mut map = Map::new();
        for (field, value) in fields.iter().zip(&values) {
            if self.budget == 0 {
                self.truncated = true;
                break;
            }
            let shown = self.json(value, depth + 1);
            map.insert(field.name.clone(), shown);
        }
        if fields.len() > map.len() {
            map.insert("…".into(), format!("{} more", fields.len() - map.len()).into());
        }
        Json::Object(map)
    }

    /// Calls a method of no arguments on an object in the stopped thread.
    fn call(&mut self, object: Id, class: Id, name: &str) -> Option<Value> {
        if self.values.no_calls {
            return None;
        }
        let method = find_method(self.vm, class, name, 0)?;
        match self.vm.invoke(self.thread, object, class, method.1.id, &[]) {
            Ok(Invoked::Returned(value)) => Some(value),
            _ => None,
        }
    }
}

/// A method named `name` of `arity` arguments that objects of `class` have: declared by it, a
/// superclass or an interface (a default method); the declaring class and the method.
pub(crate) fn find_method(
    vm: &mut Vm,
    class: Id,
    name: &str,
    arity: usize,
) -> Option<(Id, vm::Method)> {
    // The class and its superclasses, nearest first, then their interfaces.
    let mut order = vm.lineage(class);
    let mut i = 0;
    while i < order.len() && order.len() < 256 {
        for interface in vm.interfaces(order[i]) {
            if !order.contains(&interface) {
                order.push(interface);
            }
        }
        i += 1;
    }
    for at in order {
        let found = vm.methods(at).into_iter().find(|m| {
            m.name == name && m.arity() == arity && m.modifiers & 0x0400 == 0 // not abstract
        });
        if let Some(method) = found {
            return Some((at, method));
        }
    }
    None
}

/// A double as JSON holds it; what JSON cannot (`NaN`, infinities) as Java prints it.
fn number(f: f64) -> Json {
    match serde_json::Number::from_f64(f) {
        Some(n) => Json::Number(n),
        None if f.is_nan() => "NaN".into(),
        None if f > 0.0 => "Infinity".into(),
        None => "-Infinity".into(),
    }
}

/// A shown value as a short text: `{id: 1, items: [2, 3]}`, `"pen"`.
pub(crate) fn text(shown: &Json) -> String {
    match shown {
        Json::Object(map) => {
            let inner: Vec<String> = map.iter().map(|(k, v)| format!("{k}: {}", text(v))).collect();
            format!("{{{}}}", inner.join(", "))
        }
        Json::Array(items) => {
            let inner: Vec<String> = items.iter().map(text).collect();
            format!("[{}]", inner.join(", "))
        }
        other => other.to_string(),
    }
}
