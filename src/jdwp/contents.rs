//! The contents of the JDK's common collections read from their fields, where no method of
//! the program may run to list them (`toArray()` is not called in a thread the VM suspended
//! as a whole, nor where `calls` traces the program): `ArrayList`, `LinkedList`, `HashMap`,
//! `LinkedHashMap`, `TreeMap`, their sets, `List.of`/`Map.of`'s and the unmodifiable views.
//! Each returns at most `max` items; `None` for a class not known here (read by its fields
//! then).

use super::vm::Vm;
use super::wire::{Id, Value};

/// Nodes followed at most in a linked structure (a cycle made by a bug ends here).
const NODES: usize = 10_000;

fn field(vm: &mut Vm, object: Id, name: &str) -> Option<Value> {
    vm.field_value(object, name)
}

fn object(value: Option<Value>) -> Option<Id> {
    match value? {
        Value::Object(_, id) if id != 0 => Some(id),
        _ => None,
    }
}

fn array(vm: &mut Vm, array: Id, count: usize) -> Vec<Value> {
    let length = vm.array_length(array).unwrap_or(0);
    vm.array_values(array, 0, count.min(length)).unwrap_or_default()
}

fn class_of(vm: &mut Vm, object: Id) -> String {
    vm.type_of(object).map(|c| vm.signature(c)).unwrap_or_default()
}

/// A collection's elements (the first `max`) and its size.
pub(super) fn elements(vm: &mut Vm, id: Id, max: usize) -> Option<(Vec<Value>, usize)> {
    let signature = class_of(vm, id);
    let name = signature.trim_start_matches("Ljava/util/").trim_end_matches(';');
    let size = |vm: &mut Vm, f: &str| match field(vm, id, f) {
        Some(Value::Int(n)) => n.max(0) as usize,
        _ => 0,
    };
    match name {
        "ArrayList" | "Vector" => {
            let count = size(vm, if name == "Vector" { "elementCount" } else { "size" });
            let data = object(field(vm, id, "elementData"))?;
            Some((array(vm, data, count.min(max)), count))
        }
        "Arrays$ArrayList" | "ImmutableCollections$ListN" => {
            let data =
                object(field(vm, id, if name == "Arrays$ArrayList" { "a" } else { "elements" }))?;
            let count = vm.array_length(data).unwrap_or(0);
            Some((array(vm, data, count.min(max)), count))
        }
        "ImmutableCollections$List12" | "ImmutableCollections$Set12" => {
            let mut items = Vec::new();
            for f in ["e0", "e1"] {
                // `e1` holds a bare `Object` (EMPTY) when there is one element.
                match field(vm, id, f) {
                    Some(v @ Value::Object(_, o))
                        if o != 0 && class_of(vm, o) != "Ljava/lang/Object;" =>
                    {
                        items.push(v)
                    }
                    Some(v @ Value::Object(..)) if f == "e0" => items.push(v),
                    _ => {}
                }
            }
            let count = items.len();
            Some((items, count))
        }
        "ImmutableCollections$SetN" => {
            let data = object(field(vm, id, "elements"))?;
            let length = vm.array_length(data).unwrap_or(0);
            let items: Vec<Value> = vm
                .array_values(data, 0, length)
                .unwrap_or_default()
                .into_iter()
                .filter(|v| !v.is_null())
                .collect();
            let count = items.len();
            Some((items.into_iter().take(max).collect(), count))
        }
        "LinkedList" => {
            let count = size(vm, "size");
            let mut items = Vec::new();
            let mut node = object(field(vm, id, "first"));
            while let Some(at) = node.filter(|_| items.len() < max.min(NODES)) {
                items.push(field(vm, at, "item").unwrap_or(Value::Void));
                node = object(field(vm, at, "next"));
            }
            Some((items, count))
        }
        "HashSet" | "LinkedHashSet" => {
            let map = object(field(vm, id, "map"))?;
            let (entries, count) = entries(vm, map, max)?;
            Some((entries.into_iter().map(|(k, _)| k).collect(), count))
        }
        "TreeSet" => {
            let map = object(field(vm, id, "m"))?;
            let (entries, count) = entries(vm, map, max)?;
            Some((entries.into_iter().map(|(k, _)| k).collect(), count))
        }
        "Collections$UnmodifiableCollection"
        | "Collections$UnmodifiableList"
        | "Collections$UnmodifiableRandomAccessList"
        | "Collections$UnmodifiableSet" => {
            let inner = object(field(vm, id, "c"))?;
            elements(vm, inner, max)
        }
        _ => None,
    }
}

/// A map's entries (the first `max`) and its size.
pub(super) fn entries(vm: &mut Vm, id: Id, max: usize) -> Option<(Vec<(Value, Value)>, usize)> {
    let signature = class_of(vm, id);
    let name = signature.trim_start_matches("Ljava/util/").trim_end_matches(';');
    let size = match field(vm, id, "size") {
        Some(Value::Int(n)) => n.max(0) as usize,
        _ => 0,
    };
    let kv = |vm: &mut Vm, node: Id, k: &str, v: &str| {
        (field(vm, node, k).unwrap_or(Value::Void), field(vm, node, v).unwrap_or(Value::Void))
    };
    let mut found = Vec::new();
    match name {
        "LinkedHashMap" => {
            let mut node = object(field(vm, id, "head"));
            while let Some(at) = node.filter(|_| found.len() < max.min(NODES)) {
                found.push(kv(vm, at, "key", "value"));
                node = object(field(vm, at, "after"));
            }
        }
        "HashMap" => {
            if let Some(table) = object(field(vm, id, "table")) {
                let length = vm.array_length(table).unwrap_or(0);
                for bucket in vm.array_values(table, 0, length).unwrap_or_default() {
                    let mut node = object(Some(bucket));
                    while let Some(at) = node.filter(|_| found.len() < max.min(NODES)) {
                        found.push(kv(vm, at, "key", "value"));
                        node = object(field(vm, at, "next"));
                    }
                }
            }
        }
        "TreeMap" => {
            // In order: left, the node, right.
            let mut stack = Vec::new();
            let mut node = object(field(vm, id, "root"));
            while found.len() < max.min(NODES) {
                while let Some(at) = node {
                    stack.push(at);
                    node = object(field(vm, at, "left"));
                }
                let Some(at) = stack.pop() else { break };
                found.push(kv(vm, at, "key", "value"));
                node = object(field(vm, at, "right"));
            }
        }
        "ImmutableCollections$Map1" => {
            found.push(kv(vm, id, "k0", "v0"));
            return Some((found, 1));
        }
        "ImmutableCollections$MapN" => {
            let table = object(field(vm, id, "table"))?;
            let length = vm.array_length(table).unwrap_or(0);
            let slots = vm.array_values(table, 0, length).unwrap_or_default();
            for pair in slots.chunks(2) {
                if let [key, value] = pair {
                    if !key.is_null() && found.len() < max {
                        found.push((key.clone(), value.clone()));
                    }
                }
            }
        }
        "Collections$UnmodifiableMap" | "Collections$UnmodifiableSortedMap" => {
            let inner = object(field(vm, id, "m"))?;
            return entries(vm, inner, max);
        }
        _ => return None,
    }
    Some((found, size))
}
