//! Calls compiled into a script (`cdp::instrument`): the script's text is replaced before its
//! code runs, and each call reports its start and end through the probe (`BINDING.e`, see
//! `probe.js`) instead of pausing at its returns.

use serde_json::{json, Value};

use super::{Open, Traced1};
use crate::cdp::breakpoints::Request;
use crate::cdp::functions::{Function, Position};
use crate::cdp::instrument;
use crate::cdp::script::Run;
use crate::cdp::Origin;
use crate::log;

impl Run<'_> {
    /// Compiles `found` (the traced functions of `script`, each with its file and line) into
    /// the script; false when V8 does not take the new text (then they get breakpoints).
    pub(in crate::cdp::script) fn compile_calls(
        &mut self,
        origin: &Origin,
        script: &str,
        source: &str,
        all: &[Function],
        found: &[(&Function, String, u64)],
        restart: bool,
    ) -> bool {
        let Some(target) = self.targets.get(origin) else { return false };
        let base = target.calls.functions.len();
        let url = target.scripts.get(script).0;
        let module = target.calls.modules.iter().any(|m| m == script);
        let mut traced = Vec::new();
        for (k, (function, ..)) in found.iter().enumerate() {
            // (An arrow's expression needs none.)
            let locations = match function.block {
                Some(_) => self.return_locations(origin, script, function),
                None => Vec::new(),
            };
            let returns = (locations.iter())
                .filter(|l| l["type"] == "return")
                .filter_map(|l| Some((number(&l["lineNumber"])?, number(&l["columnNumber"])?)))
                .collect();
            traced.push(instrument::Traced { index: base + k, function, returns });
        }
        // The whole script first; then keeping every function's end where it was (V8 will
        // not change an ES module's top level, nor restart a page's classic script: a
        // function whose end moved is new to it), the others left to breakpoints.
        let ends_kept: &[bool] = if module { &[true] } else { &[false, true] };
        let mut taken = None;
        for &keep_ends in ends_kept {
            let catch = self.plan.failures.is_none();
            let compiled =
                instrument::compile(source, &traced, all, &self.binding, keep_ends, catch);
            let Some(compiled) = compiled else { continue };
            if self.set_compiled(origin, script, &url, &compiled, found, base, restart) {
                taken = Some(compiled);
                break;
            }
        }
        let Some(compiled) = taken else {
            log::debug(format_args!("calls not compiled into {url}"));
            return false;
        };
        let Some(target) = self.targets.get_mut(origin) else { return false };
        for (function, file, line) in found {
            target.calls.functions.push(Traced1::new(function, file.clone(), *line));
        }
        for placed in &compiled.functions {
            let (line, column) = placed.open;
            target.calls.by_location.insert((script.to_string(), line, column), placed.index);
        }
        log::debug(format_args!(
            "calls compiled into {url}: {} functions, {} left to breakpoints",
            compiled.functions.len(),
            compiled.left.len()
        ));
        self.place_again(origin);
        // Those left out get breakpoints where they are in the new text (the same functions,
        // in the same order).
        let now = crate::cdp::functions::functions(&compiled.source);
        for n in compiled.left {
            let (function, file, line) = &found[n];
            let at = all.iter().position(|f| std::ptr::eq(f, *function));
            if let Some(function) = at.and_then(|at| now.get(at)) {
                self.trace_function(origin, script, function, file.clone(), *line);
            }
        }
        true
    }

    /// Registers the functions of `compiled` with the probe and has V8 take its text: false
    /// when it does not.
    #[allow(clippy::too_many_arguments)]
    fn set_compiled(
        &mut self,
        origin: &Origin,
        script: &str,
        url: &str,
        compiled: &instrument::Compiled,
        found: &[(&Function, String, u64)],
        base: usize,
        restart: bool,
    ) -> bool {
        let span = |(from, to): (Position, Position)| json!([from.0, from.1, to.0, to.1]);
        let entries: Vec<Value> = (compiled.functions.iter())
            .map(|placed| {
                let function = found[placed.index - base].0;
                let kind = match (function.is_generator, function.is_async) {
                    (true, _) => 2,
                    (false, true) => 1,
                    (false, false) => 0,
                };
                let inner: Vec<Value> = placed.inner.iter().copied().map(span).collect();
                let concise = function.block.is_none();
                json!([placed.index, kind, concise, url, span(placed.span), inner])
            })
            .collect();
        let expression = format!("{}.trace({})", self.binding, Value::Array(entries));
        let registered = self.ask(
            origin,
            "Runtime.evaluate",
            json!({"expression": expression, "returnByValue": true}),
        );
        if registered.and_then(|r| r.pointer("/result/value").cloned()) != Some(json!(true)) {
            return false;
        }
        let set = self.ask(
            origin,
            "Debugger.setScriptSource",
            json!({"scriptId": script, "scriptSource": compiled.source, "allowTopFrameEditing": restart}),
        );
        let status = set.as_ref().map(|s| s["status"].as_str().unwrap_or("Ok"));
        log::debug(format_args!("compiled calls into {url}: {status:?}"));
        status == Some("Ok") && set.is_some_and(|s| s.get("exceptionDetails").is_none())
    }

    /// Places the run's breakpoint and probes again: V8 dropped those in the functions it
    /// compiled anew.
    fn place_again(&mut self, origin: &Origin) {
        let Some(target) = self.targets.get_mut(origin) else { return };
        let mut requests = Vec::new();
        let mut gone = Vec::new();
        let breakpoints = std::iter::once(&mut target.breakpoint).chain(&mut target.probes);
        for (n, breakpoint) in breakpoints.enumerate() {
            gone.extend(breakpoint.unplace());
            let placed = breakpoint.requests().into_iter();
            requests
                .extend(placed.filter(|(_, r)| matches!(r, Request::Placed(_))).map(|r| (n, r)));
        }
        for id in gone {
            self.ask(origin, "Debugger.removeBreakpoint", json!({"breakpointId": id}));
        }
        for (n, (params, request)) in requests {
            let answer = self.ask(origin, "Debugger.setBreakpointByUrl", params);
            let Some(target) = self.targets.get_mut(origin) else { return };
            let breakpoint = match n {
                0 => &mut target.breakpoint,
                n => &mut target.probes[n - 1],
            };
            breakpoint.set(request, &answer.unwrap_or_default(), &target.scripts);
        }
    }

    /// A report of a compiled call (`c`, `r`, `x`, `t`, `u`, `o`: see `probe.js`); false for
    /// another.
    pub(in crate::cdp::script) fn compiled_report(
        &mut self,
        origin: &Origin,
        payload: &str,
    ) -> bool {
        let Some(kind) = payload.chars().next().filter(|c| "crxtou".contains(*c)) else {
            return false;
        };
        let rest = &payload[1..];
        match kind {
            'c' => {
                let parts: Vec<&str> = rest.splitn(4, ':').collect();
                let number = |n: usize| parts.get(n).and_then(|p| p.parse::<u64>().ok());
                let (Some(index), Some(local), Some(parent)) = (number(0), number(1), number(2))
                else {
                    return true;
                };
                let values = parts.get(3).copied().unwrap_or("[]");
                let values: Vec<Value> = serde_json::from_str(values).unwrap_or_default();
                self.open_call(origin, index as usize, values, Some((local, parent)));
            }
            'o' => {
                let name = rest.parse::<usize>().ok().and_then(|index| {
                    self.targets.get(origin)?.calls.functions.get(index).map(|f| f.name.clone())
                });
                if let Some(name) = name {
                    self.calls.next += 1;
                    *self.calls.omitted.entry(name).or_default() += 1;
                }
            }
            _ => {
                let (local, value) = rest.split_once(':').unwrap_or((rest, ""));
                let Ok(local) = local.parse::<u64>() else { return true };
                let Some(target) = self.targets.get_mut(origin) else { return true };
                let open = &mut target.calls.open;
                let Some(at) = open.iter().rposition(|o| o.local == Some(local)) else {
                    return true;
                };
                let mut call: Open = open.remove(at);
                let value = serde_json::from_str::<Value>(value).unwrap_or(Value::Null);
                match (kind, call.threw.take()) {
                    ('r', _) => call.record["return"] = value,
                    ('x', _) => call.record["threw"] = value,
                    ('u', None) => {
                        call.record["threw"] =
                            json!({"type": "unknown", "message": "an exception left it"});
                    }
                    // Left without returning: by the exception seen while it was open, or (a
                    // generator closed early) with nothing.
                    (_, Some(threw)) => call.record["threw"] = threw,
                    (_, None) => call.record["return"] = "undefined".into(),
                }
                self.ended(origin, call);
            }
        }
        true
    }
}

fn number(v: &Value) -> Option<u32> {
    v.as_u64().and_then(|n| u32::try_from(n).ok())
}
