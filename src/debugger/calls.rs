//! Traced calls: a `debug-script` run with `calls: [{file, function?}]` answers every call of
//! those functions, in the order they started, each with its arguments and its return value or
//! the exception it raised. Each runtime sees calls its own way (Python's `sys.monitoring` or
//! `sys.settrace`, V8's breakpoints at a function's start and its returns, a debug adapter's
//! function breakpoints) and reports records of one shape, collected here:
//!
//! `{call, function, file, line, depth, parent?, args: {name: preview}, return | threw, process?}`
//!
//! `call` numbers a process's calls as they started, `depth` is the nesting among the traced
//! calls of one thread and `parent` the traced call a call started in; `process` is said when
//! several processes made calls. A call with neither `return` nor `threw` had not ended when
//! the program did (or was killed).

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::{json, Map, Value};

use crate::debugger::limits::RESULTS_BUDGET;

/// The calls recorded when `maxHits` does not say: enough for a test's call tree, small
/// enough to read.
pub(crate) const DEFAULT_MAX_CALLS: usize = 200;

/// One `calls` entry of a plan: the functions of `file`, or the one named `function` there.
#[derive(Debug, Clone)]
pub(crate) struct Traced {
    pub(crate) file: PathBuf,
    pub(crate) real_file: PathBuf,
    pub(crate) function: Option<String>,
}

/// The calls a run recorded, and those past its cap counted per function.
#[derive(Debug, Default)]
pub(crate) struct Calls {
    /// `(pid, record)`, as they arrived (a call's record comes when it ends).
    records: Vec<(u32, Value)>,
    /// What the answer says of traced functions that could not be traced.
    pub(crate) notes: Vec<String>,
    omitted: BTreeMap<String, u64>,
    bytes: usize,
}

impl Calls {
    /// Records a process's calls (`records`, each a record above) and its count of those it
    /// left out (`omitted`: function → calls), within `cap` calls and the answer's budget.
    pub(crate) fn add(
        &mut self,
        pid: u32,
        records: Vec<Value>,
        omitted: &Map<String, Value>,
        cap: usize,
    ) {
        for record in records {
            self.record(pid, record, cap);
        }
        for (function, count) in omitted {
            self.omit(function, count.as_u64().unwrap_or(0));
        }
    }

    /// The calls `other` recorded and left out, as process `pid`'s: past `cap`, the last to
    /// start are left out.
    pub(crate) fn absorb(&mut self, pid: u32, other: Calls, cap: usize) {
        let mut records = other.records;
        records.sort_by_key(|(_, record)| record["call"].as_u64());
        for (_, record) in records {
            self.record(pid, record, cap);
        }
        for (function, count) in other.omitted {
            self.omit(&function, count);
        }
        for note in other.notes {
            if !self.notes.contains(&note) {
                self.notes.push(note);
            }
        }
    }

    /// Says something of the traced functions in the answer (once).
    pub(crate) fn note(&mut self, note: String) {
        if !self.notes.contains(&note) {
            self.notes.push(note);
        }
    }

    /// One call of process `pid`, or counted as left out past `cap` or the budget.
    pub(crate) fn record(&mut self, pid: u32, record: Value, cap: usize) {
        let size = record.to_string().len();
        if self.records.len() >= cap || self.bytes + size > RESULTS_BUDGET {
            let function = record["function"].as_str().unwrap_or("?").to_string();
            self.omit(&function, 1);
            return;
        }
        self.bytes += size;
        self.records.push((pid, record));
    }

    /// Calls of `function` left out.
    pub(crate) fn omit(&mut self, function: &str, count: u64) {
        *self.omitted.entry(function.to_string()).or_default() += count;
    }

    /// How many calls were recorded.
    pub(crate) fn len(&self) -> usize {
        self.records.len()
    }

    /// `calls` in the order they started (each process's in turn, in the order the processes
    /// first reported), and `callsOmitted` when the cap left some out.
    pub(crate) fn json(&self) -> (Value, Option<Value>) {
        let mut pids: Vec<u32> = Vec::new();
        for (pid, _) in &self.records {
            if !pids.contains(pid) {
                pids.push(*pid);
            }
        }
        let mut sorted: Vec<&(u32, Value)> = self.records.iter().collect();
        sorted.sort_by_key(|(pid, record)| {
            (pids.iter().position(|p| p == pid), record["call"].as_u64().unwrap_or(0))
        });
        let several = pids.len() > 1;
        let calls: Vec<Value> = sorted
            .into_iter()
            .map(|(pid, record)| {
                let mut record = record.clone();
                if several {
                    record["process"] = json!(pid);
                }
                record
            })
            .collect();
        let omitted = (!self.omitted.is_empty()).then(|| json!(self.omitted));
        (calls.into(), omitted)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_the_order_they_started_within_the_cap() {
        let mut calls = Calls::default();
        let record = |n: u64, function: &str| json!({"call": n, "function": function});
        let none = Map::new();
        // Each call's record comes when it ends: the inner call first.
        calls.add(7, vec![record(2, "inner"), record(1, "outer")], &none, 3);
        let omitted = json!({"inner": 4});
        calls.add(7, vec![record(3, "inner"), record(4, "inner")], omitted.as_object().unwrap(), 3);
        let (listed, omitted) = calls.json();
        let numbers: Vec<u64> =
            listed.as_array().unwrap().iter().map(|c| c["call"].as_u64().unwrap()).collect();
        assert_eq!(numbers, [1, 2, 3]);
        assert_eq!(listed[0].get("process"), None, "one process: not said");
        assert_eq!(omitted, Some(json!({"inner": 5})));

        calls.add(9, vec![record(1, "outer")], &none, 10);
        let (listed, _) = calls.json();
        assert_eq!(listed[3]["process"], 9);
        assert_eq!(listed[0]["process"], 7);
    }
}
