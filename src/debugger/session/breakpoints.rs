//! The session's breakpoint table: breakpoints and watchpoints, numbered together, their
//! hits, and how each is described (where it bound, or why not).

use serde_json::{json, Value};

use super::{Actor, Reply, State, Stop, WATCH_CHARS};
use crate::debugger::backend::Backend;
use crate::debugger::model::{Action, BreakpointSpec, Reason, Resolution};
use crate::debugger::{Code, Failure};

/// A breakpoint of the session: what was asked, and how often it was hit. Where it landed is
/// the backend's to say ([`Backend::resolution`]).
pub(super) struct UserBreakpoint {
    pub(super) id: String,
    pub(super) spec: BreakpointSpec,
    pub(super) hits: u64,
}

/// A watchpoint of the session (numbered with the breakpoints): what it watches, the
/// expression that reads it anywhere, and its value when last seen.
pub(super) struct Watchpoint {
    pub(super) id: String,
    pub(super) expression: String,
    pub(super) access: String,
    pub(super) read: String,
    pub(super) value: Value,
    pub(super) hits: u64,
}

impl<B: Backend> Actor<B> {
    /// Places a breakpoint; answers its description.
    pub(super) fn add_breakpoint(&mut self, spec: BreakpointSpec) -> Reply {
        let id = (self.next_breakpoint + 1).to_string();
        self.backend.set_breakpoint(&id, &spec)?;
        self.next_breakpoint += 1;
        self.breakpoints.push(UserBreakpoint { id, spec, hits: 0 });
        let user = self.breakpoints.last().expect("just added");
        Ok(self.breakpoint_json(user, self.backend.undebugged().describe().as_deref()))
    }

    /// Watches what `expression` names in the paused top frame: the backend arms a data
    /// breakpoint on its address, and each stop it causes says the old and new value.
    pub(super) fn add_watchpoint(&mut self, expression: String, access: String) -> Reply {
        let State::Paused { stop, .. } = &self.state else {
            return Err(Failure::new(
                Code::Running,
                format!(
                    "a watchpoint is set while the program is paused (the expression is read in \
                     the paused frame): stop session {} at a breakpoint or pause it first (debug-continue with `pause: true`)",
                    self.id
                ),
            ));
        };
        let id = (self.next_breakpoint + 1).to_string();
        let read = self.backend.set_watchpoint(&id, &expression, &access, &stop.paused)?;
        let value = self.backend.evaluate(Some(&stop.paused), &read, 0, WATCH_CHARS)?;
        self.next_breakpoint += 1;
        let answer = json!({"sessionId": self.id, "breakpointId": id, "data": expression,
                            "access": access, "verified": true, "value": value});
        self.watchpoints.push(Watchpoint { id, expression, access, read, value, hits: 0 });
        Ok(answer)
    }

    /// Whether `stop` is only at breakpoints that have not reached their `hitCount` yet (their
    /// hits counted): the session lets the program go on without a word. A step's end, a pause
    /// or an exception there is shown.
    pub(super) fn before_hit_count(&self, stop: &Stop<B::Paused>) -> bool {
        let at_breakpoints = match stop.reason {
            Reason::Breakpoint => true,
            Reason::Unsaid => self.last_action == Action::Continue,
            _ => false,
        };
        let before = |id: &String| {
            let user = self.breakpoints.iter().find(|b| b.id == *id);
            user.is_some_and(|b| b.hits < b.spec.hit_count.unwrap_or(0))
        };
        at_breakpoints && !stop.hits.is_empty() && stop.hits.iter().all(before)
    }

    /// At a watchpoint stop: which watchpoints saw their value change (or, reading, were
    /// read), with the old and new values; their ids become the stop's hits.
    pub(super) fn watchpoints_hit(&mut self, stop: &mut Stop<B::Paused>) {
        self.watched.clear();
        for watch in &mut self.watchpoints {
            let now = self.backend.evaluate(Some(&stop.paused), &watch.read, 0, WATCH_CHARS);
            let now = now.unwrap_or_else(|f| json!({"type": "error", "value": f.message()}));
            if now == watch.value && watch.access == "write" {
                continue;
            }
            watch.hits += 1;
            stop.hits.push(watch.id.clone());
            let old = std::mem::replace(&mut watch.value, now.clone());
            self.watched.push(json!({"breakpointId": watch.id, "expression": watch.expression,
                                     "old": old, "new": now}));
        }
    }

    pub(super) fn remove_breakpoint(&mut self, id: &str) -> Reply {
        if let Some(index) = self.watchpoints.iter().position(|w| w.id == id) {
            self.backend.remove_watchpoint(id)?;
            self.watchpoints.remove(index);
            return Ok(json!({"sessionId": self.id, "removed": id}));
        }
        let Some(index) = self.breakpoints.iter().position(|b| b.id == id) else {
            let mut known: Vec<&str> = self.breakpoints.iter().map(|b| b.id.as_str()).collect();
            known.extend(self.watchpoints.iter().map(|w| w.id.as_str()));
            return Err(Failure::new(
                Code::NoBreakpoint,
                format!(
                    "no breakpoint {id} in session {}: its breakpoints are [{}]",
                    self.id,
                    known.join(", ")
                ),
            ));
        };
        self.breakpoints.remove(index);
        self.backend.remove_breakpoint(id)?;
        Ok(json!({"sessionId": self.id, "removed": id}))
    }

    /// `undebugged`: what the program ran outside the debugger so far, described.
    pub(super) fn breakpoint_json(&self, user: &UserBreakpoint, undebugged: Option<&str>) -> Value {
        let Resolution { resolved, generated, reason } = self.backend.resolution(&user.id);
        let spec = &user.spec;
        let mut json = json!({"breakpointId": user.id, "file": spec.file.display().to_string(),
            "line": spec.line, "verified": !resolved.is_empty(), "hits": user.hits});
        if let Some(column) = spec.column {
            json["column"] = column.into();
        }
        if let Some(condition) = &spec.condition {
            json["condition"] = condition.as_str().into();
        }
        if let Some(message) = &spec.log_message {
            json["logMessage"] = message.as_str().into();
        }
        if let Some(count) = spec.hit_count {
            json["hitCount"] = count.into();
        }
        if !generated.is_empty() {
            json["generated"] = generated.into();
        }
        if resolved.is_empty() {
            let reason = match undebugged {
                Some(what) => format!(
                    "not bound in the process debug-mcp started; the program also ran {what} \
                     outside the debugger: if the file runs there, its hits are not seen"
                ),
                None => reason.unwrap_or_else(|| "not bound yet".into()),
            };
            json["reason"] = reason.into();
        }
        json["resolved"] = resolved.into();
        json
    }

    pub(super) fn breakpoints_json(&self) -> Vec<Value> {
        let undebugged = self.backend.undebugged().describe();
        let breakpoints =
            self.breakpoints.iter().map(|b| self.breakpoint_json(b, undebugged.as_deref()));
        let watchpoints = self.watchpoints.iter().map(|w| {
            json!({"breakpointId": w.id, "data": w.expression, "access": w.access,
                   "verified": true, "hits": w.hits, "value": w.value})
        });
        breakpoints.chain(watchpoints).collect()
    }
}
