//! What a V8 heap snapshot (`HeapProfiler.takeHeapSnapshot`) says of suspended functions: an
//! async function waiting at an `await` lives only as a generator object on the heap (no
//! stack, no protocol command lists them, and `Runtime.queryObjects` leaves them out). Each is
//! an object with an internal `function` edge to its closure, whose script the snapshot's
//! `locations` name. Its id opens it (`HeapProfiler.getObjectByHeapObjectId`), and
//! `Runtime.getProperties` then tells its state and where it waits (`[[GeneratorLocation]]`).

use std::collections::{HashMap, HashSet};

use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::Value;

/// A generator object of the heap, by the function it runs.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Suspended {
    /// The object's heap id (`HeapProfiler.getObjectByHeapObjectId`).
    pub(crate) heap_id: u64,
    /// The function's name.
    pub(crate) function: String,
    /// The script the function is in.
    pub(crate) script_id: String,
}

/// The parts of a snapshot read here; the rest (samples, traces) is skipped unread.
struct Snapshot {
    meta: Meta,
    nodes: Vec<u64>,
    edges: Vec<u64>,
    locations: Vec<u64>,
    strings: Vec<String>,
}

/// `snapshot.meta`: the layout of the flat arrays.
#[derive(Default)]
struct Meta {
    node_fields: Vec<String>,
    /// The first entry names the node types.
    node_types: Vec<Value>,
    edge_fields: Vec<String>,
    edge_types: Vec<Value>,
    location_fields: Vec<String>,
}

impl<'de> Deserialize<'de> for Snapshot {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Snapshot, D::Error> {
        deserializer.deserialize_map(SnapshotVisitor)
    }
}

struct SnapshotVisitor;

impl<'de> Visitor<'de> for SnapshotVisitor {
    type Value = Snapshot;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a V8 heap snapshot")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Snapshot, A::Error> {
        let mut header: Option<Value> = None;
        let (mut nodes, mut edges, mut locations, mut strings) = (None, None, None, None);
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "snapshot" => header = Some(map.next_value()?),
                "nodes" => nodes = Some(map.next_value()?),
                "edges" => edges = Some(map.next_value()?),
                "locations" => locations = Some(map.next_value()?),
                "strings" => strings = Some(map.next_value()?),
                _ => drop(map.next_value::<IgnoredAny>()?),
            }
        }
        let missing = |what| serde::de::Error::custom(format!("no {what}"));
        let meta = header.as_ref().map(|h| &h["meta"]).ok_or_else(|| missing("snapshot"))?;
        let list =
            |name: &str| -> Vec<Value> { meta[name].as_array().cloned().unwrap_or_default() };
        let names = |name: &str| -> Vec<String> {
            list(name).iter().filter_map(Value::as_str).map(String::from).collect()
        };
        Ok(Snapshot {
            meta: Meta {
                node_fields: names("node_fields"),
                node_types: list("node_types"),
                edge_fields: names("edge_fields"),
                edge_types: list("edge_types"),
                location_fields: names("location_fields"),
            },
            nodes: nodes.ok_or_else(|| missing("nodes"))?,
            edges: edges.ok_or_else(|| missing("edges"))?,
            locations: locations.unwrap_or_default(),
            strings: strings.ok_or_else(|| missing("strings"))?,
        })
    }
}

/// The generator objects (async functions' among them) of the program's own code (`own`, by
/// their function's script): each chain of async functions awaiting one another innermost
/// first (the one waiting on something else, then the one awaiting it, ...), the chain with
/// the most of the program's own functions first. An error when the text is not a snapshot
/// this reads.
pub(crate) fn generators(text: &str, own: &dyn Fn(&str) -> bool) -> Result<Vec<Suspended>, String> {
    let snapshot: Snapshot = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let Some(graph) = Graph::new(&snapshot)? else { return Ok(Vec::new()) };
    let found: Vec<usize> = graph.nodes().filter(|&n| graph.function(n).is_some()).collect();
    // Each one's awaiter, and which are the program's own.
    let outer: HashMap<usize, usize> =
        found.iter().filter_map(|&g| Some((g, graph.awaiter(g)?))).collect();
    let awaiting_others: HashSet<usize> = outer.values().copied().collect();
    let own_ones: HashSet<usize> = (found.iter().copied())
        .filter(|&g| graph.function(g).is_some_and(|(_, script)| own(&script.to_string())))
        .collect();
    // The program's own functions, and all, from an innermost one out (a ring counted once).
    let depth = |g: usize| {
        let mut on = vec![g];
        let mut seen = HashSet::from([g]);
        while let Some(&next) = on.last().and_then(|last| outer.get(last)) {
            if !seen.insert(next) {
                break;
            }
            on.push(next);
        }
        (on.iter().filter(|f| own_ones.contains(f)).count(), on.len())
    };
    // The chain with the most own functions first, then the deepest (the heap's order is not
    // the same from run to run); chains that meet go on to their common callers once. Then
    // those in a ring of awaits.
    let mut innermost: Vec<usize> =
        found.iter().copied().filter(|g| !awaiting_others.contains(g)).collect();
    innermost.sort_by_cached_key(|&g| std::cmp::Reverse(depth(g)));
    let mut ordered: Vec<usize> = Vec::new();
    let mut placed: HashSet<usize> = HashSet::new();
    for g in innermost {
        let mut at = Some(g);
        while let Some(one) = at.filter(|&a| placed.insert(a)) {
            ordered.push(one);
            at = outer.get(&one).copied();
        }
    }
    ordered.extend(found.iter().filter(|g| !placed.contains(g)));
    Ok(ordered
        .into_iter()
        .filter(|g| own_ones.contains(g))
        .filter_map(|g| {
            let (closure, script) = graph.function(g)?;
            Some(Suspended {
                heap_id: snapshot.nodes[g + graph.node_id],
                function: graph.name(closure).to_string(),
                script_id: script.to_string(),
            })
        })
        .collect())
}

/// A snapshot's nodes and edges, read through its layout. A node is its offset in `nodes`.
struct Graph<'a> {
    snapshot: &'a Snapshot,
    node_width: usize,
    edge_width: usize,
    node_type: usize,
    node_name: usize,
    node_id: usize,
    edge_type: usize,
    edge_name: usize,
    edge_to: usize,
    object: u64,
    closure: u64,
    internal: u64,
    hidden: u64,
    /// Where each node's edges start in `edges` (by node number).
    first_edge: Vec<usize>,
    /// Each closure's script.
    scripts: HashMap<usize, u64>,
    /// The strings edges are named by (an index into `strings`), `u64::MAX` when absent.
    function: u64,
    context: u64,
    extension: u64,
    reactions: u64,
    next: u64,
}

impl<'a> Graph<'a> {
    fn new(snapshot: &'a Snapshot) -> Result<Option<Graph<'a>>, String> {
        let meta = &snapshot.meta;
        let field = |fields: &[String], name: &str| {
            fields.iter().position(|f| f == name).ok_or(format!("no {name} field"))
        };
        let kind = |types: &[Value], name: &str| {
            let names = types.first().and_then(|t| t.as_array());
            let found = names.and_then(|n| n.iter().position(|t| t == name));
            found.map(|i| i as u64).ok_or(format!("no {name} type"))
        };
        let (node_width, edge_width) = (meta.node_fields.len(), meta.edge_fields.len());
        let location_width = meta.location_fields.len();
        if node_width == 0 || edge_width == 0 || location_width == 0 {
            return Ok(None);
        }
        let node_edges = field(&meta.node_fields, "edge_count")?;
        let mut first_edge = Vec::with_capacity(snapshot.nodes.len() / node_width);
        let mut at = 0;
        for node in snapshot.nodes.chunks_exact(node_width) {
            first_edge.push(at);
            at += node[node_edges] as usize * edge_width;
        }
        let (object_index, script_id) = (
            field(&meta.location_fields, "object_index")?,
            field(&meta.location_fields, "script_id")?,
        );
        let scripts = (snapshot.locations.chunks_exact(location_width))
            .map(|l| (l[object_index] as usize, l[script_id]))
            .collect();
        let string = |s: &str| {
            let found = snapshot.strings.iter().position(|t| t == s);
            found.map_or(u64::MAX, |i| i as u64)
        };
        Ok(Some(Graph {
            snapshot,
            node_width,
            edge_width,
            node_type: field(&meta.node_fields, "type")?,
            node_name: field(&meta.node_fields, "name")?,
            node_id: field(&meta.node_fields, "id")?,
            edge_type: field(&meta.edge_fields, "type")?,
            edge_name: field(&meta.edge_fields, "name_or_index")?,
            edge_to: field(&meta.edge_fields, "to_node")?,
            object: kind(&meta.node_types, "object")?,
            closure: kind(&meta.node_types, "closure")?,
            internal: kind(&meta.edge_types, "internal")?,
            hidden: kind(&meta.edge_types, "hidden")?,
            first_edge,
            scripts,
            function: string("function"),
            context: string("context"),
            extension: string("extension"),
            reactions: string("reactions_or_result"),
            next: string("next"),
        }))
    }

    fn nodes(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.first_edge.len()).map(|n| n * self.node_width)
    }

    fn field(&self, node: usize, field: usize) -> u64 {
        self.snapshot.nodes.get(node + field).copied().unwrap_or(u64::MAX)
    }

    fn name(&self, node: usize) -> &str {
        let index = self.field(node, self.node_name) as usize;
        self.snapshot.strings.get(index).map_or("", String::as_str)
    }

    /// A node's edges: `(type, name or index, to)`.
    fn edges(&self, node: usize) -> impl Iterator<Item = (u64, u64, usize)> + '_ {
        let start = self.first_edge.get(node / self.node_width).copied().unwrap_or(0);
        let end = self.first_edge.get(node / self.node_width + 1).copied();
        let end = end.unwrap_or(self.snapshot.edges.len());
        let own = self.snapshot.edges.get(start..end).unwrap_or_default();
        own.chunks_exact(self.edge_width)
            .map(|e| (e[self.edge_type], e[self.edge_name], e[self.edge_to] as usize))
    }

    /// The node an internal edge of this name leads to.
    fn internal(&self, node: usize, name: u64) -> Option<usize> {
        let mut edges = self.edges(node);
        edges.find(|&(kind, n, _)| kind == self.internal && n == name).map(|(_, _, to)| to)
    }

    /// A generator object's closure and the closure's script: an object with an internal
    /// `function` edge to a closure whose script is known.
    fn function(&self, node: usize) -> Option<(usize, u64)> {
        if self.field(node, self.node_type) != self.object {
            return None;
        }
        let closure = self.internal(node, self.function)?;
        if self.field(closure, self.node_type) != self.closure {
            return None;
        }
        Some((closure, *self.scripts.get(&closure)?))
    }

    /// The async function awaiting this one: its promise's reactions hold the closures that
    /// resume the awaiting function, whose context's extension is that function's generator.
    fn awaiter(&self, generator: usize) -> Option<usize> {
        let promise = (self.edges(generator))
            .find(|&(kind, _, to)| kind == self.hidden && self.name(to) == "Promise")?
            .2;
        let mut reaction = self.internal(promise, self.reactions)?;
        for _ in 0..8 {
            let closures = self.edges(reaction).map(|(_, _, to)| to);
            for closure in closures.filter(|&c| self.field(c, self.node_type) == self.closure) {
                let awaiting = self
                    .internal(closure, self.context)
                    .and_then(|context| self.internal(context, self.extension))
                    .filter(|&g| self.function(g).is_some());
                if awaiting.is_some() {
                    return awaiting;
                }
            }
            reaction = self.internal(reaction, self.next)?;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Node 20's layout, cut down: a root, an async function's generator object (`Generator`,
    /// its `function` edge to the closure `handle` in script 81), a plain object with a
    /// property named `function`, and the closure.
    const SNAPSHOT: &str = r#"{
      "snapshot": {"meta": {
        "node_fields": ["type","name","id","self_size","edge_count","trace_node_id","detachedness"],
        "node_types": [["hidden","array","string","object","code","closure"],"string","number","number","number","number","number"],
        "edge_fields": ["type","name_or_index","to_node"],
        "edge_types": [["context","element","property","internal","hidden","shortcut","weak"],"string_or_number","node"],
        "location_fields": ["object_index","script_id","line","column"]}},
      "nodes": [0,0,1,0,2,0,0, 3,1,83865,32,1,0,0, 3,0,7,16,1,0,0, 5,2,90,32,0,0,0],
      "edges": [1,0,7, 1,1,14, 3,3,21, 2,3,21],
      "locations": [21,81,6,21],
      "strings": ["", "Generator", "handle", "function"]
    }"#;

    #[test]
    fn a_generator_object_is_found_by_its_function_edge() {
        let found = generators(SNAPSHOT, &|_| true).unwrap();
        let handle =
            Suspended { heap_id: 83865, function: "handle".into(), script_id: "81".into() };
        assert_eq!(found, vec![handle]);
    }

    /// A node: `(type, name, id, edges: [(type, name, to node)])`.
    type Node<'a> = (&'a str, &'a str, u64, &'a [(&'a str, &'a str, usize)]);

    /// A snapshot of Node 20's layout from its nodes
    /// and closures' scripts `(node, script)`; names are strings, an element's or hidden
    /// edge's name a number.
    fn snapshot(nodes: &[Node], scripts: &[(usize, u64)]) -> String {
        let node_types = ["hidden", "array", "string", "object", "code", "closure"];
        let edge_types = ["context", "element", "property", "internal", "hidden"];
        let mut strings: Vec<String> = vec![String::new()];
        let mut index = |s: &str| match strings.iter().position(|t| t == s) {
            Some(i) => i,
            None => {
                strings.push(s.into());
                strings.len() - 1
            }
        };
        let (mut flat_nodes, mut flat_edges) = (Vec::new(), Vec::new());
        for (kind, name, id, edges) in nodes {
            let kind = node_types.iter().position(|t| t == kind).unwrap();
            flat_nodes.extend([kind, index(name), *id as usize, 0, edges.len(), 0, 0]);
            for (kind, name, to) in *edges {
                let name = match *kind {
                    "hidden" | "element" => name.parse().unwrap(),
                    _ => index(name),
                };
                let kind = edge_types.iter().position(|t| t == kind).unwrap();
                flat_edges.extend([kind, name, to * 7]);
            }
        }
        let locations: Vec<usize> =
            scripts.iter().flat_map(|&(node, script)| [node * 7, script as usize, 0, 0]).collect();
        serde_json::json!({
            "snapshot": {"meta": {
                "node_fields": ["type","name","id","self_size","edge_count","trace_node_id","detachedness"],
                "node_types": [node_types, "string"],
                "edge_fields": ["type","name_or_index","to_node"],
                "edge_types": [edge_types, "string_or_number", "node"],
                "location_fields": ["object_index","script_id","line","column"]}},
            "nodes": flat_nodes, "edges": flat_edges, "locations": locations, "strings": strings,
        })
        .to_string()
    }

    #[test]
    fn awaits_are_ordered_innermost_first_the_deepest_chain_first() {
        // `outer` awaits `inner` (inner's promise has a reaction whose closure's context
        // extends to outer's generator); `lone` awaits something else and comes first in the
        // heap.
        let text = snapshot(
            &[
                ("hidden", "", 1, &[("element", "1", 1), ("element", "2", 2), ("element", "3", 3)]),
                ("object", "Generator", 5, &[("internal", "function", 4)]),
                ("object", "Generator", 10, &[("internal", "function", 5), ("hidden", "2", 8)]),
                ("object", "Generator", 20, &[("internal", "function", 6), ("hidden", "2", 7)]),
                ("closure", "lone", 35, &[]),
                ("closure", "outer", 30, &[]),
                ("closure", "inner", 40, &[]),
                ("object", "Promise", 50, &[("internal", "reactions_or_result", 9)]),
                ("object", "Promise", 60, &[]),
                ("hidden", "system / PromiseReaction", 70, &[("hidden", "0", 10)]),
                ("closure", "", 80, &[("internal", "context", 11)]),
                ("object", "system / Context", 90, &[("internal", "extension", 2)]),
            ],
            &[(4, 80), (5, 81), (6, 82)],
        );
        let found = generators(&text, &|_| true).unwrap();
        let names: Vec<(&str, u64)> =
            found.iter().map(|g| (g.function.as_str(), g.heap_id)).collect();
        assert_eq!(names, [("inner", 20), ("outer", 10), ("lone", 5)]);
        assert_eq!(found[0].script_id, "82");
        // Only the program's own are said: `outer`'s script is a library's.
        let found = generators(&text, &|script| script != "81").unwrap();
        let names: Vec<&str> = found.iter().map(|g| g.function.as_str()).collect();
        assert_eq!(names, ["inner", "lone"]);
    }

    #[test]
    fn a_text_that_is_no_snapshot_says_so() {
        assert!(generators("{\"nodes\": []}", &|_| true).is_err());
    }
}
