//! A paused frame's variables through the adapter: a scope's (each local once, by the name the
//! program gives it; the adapter's groupings listed in their place or left out) and a value's
//! members, each with its preview (`dap::values`).

use serde_json::{json, Value};

use super::Dap;
use crate::dap::flavour::Flavour;
use crate::dap::values::{preview, SHOWN};
use crate::debugger::model::Variable;
use crate::debugger::Failure;

impl<F: Flavour> Dap<F> {
    /// Variables of the named scopes (`Locals`, `Globals`) of a frame.
    pub(super) fn named_scopes(
        &mut self,
        frame_id: &Value,
        names: &[&str],
        start: usize,
        max: usize,
    ) -> Result<Vec<Variable>, Failure> {
        let scopes = self.request("scopes", json!({"frameId": frame_id}))?;
        let mut out = Vec::new();
        for scope in scopes["scopes"].as_array().cloned().unwrap_or_default() {
            let name = scope["name"].as_str().unwrap_or_default();
            if !names.contains(&name) {
                continue;
            }
            for mut v in self.children(&scope["variablesReference"], start, max, true)? {
                v.scope = Some(self.flavour.scope_kind(name).into());
                out.push(v);
            }
        }
        Ok(out)
    }

    /// `variables` of a reference, from `start`, at most `max` (then how many more).
    /// `in_scope`: listing a frame's scope (else an object's members).
    pub(super) fn children(
        &mut self,
        reference: &Value,
        start: usize,
        max: usize,
        in_scope: bool,
    ) -> Result<Vec<Variable>, Failure> {
        // The adapter's groupings (debugpy's "class variables") hold the program's names: they
        // are listed in their place, or left out.
        let mut all: Vec<Value> = Vec::new();
        for mut v in self.variables_of(reference)? {
            let name = v["name"].as_str().unwrap_or_default();
            match self.flavour.group(name, in_scope) {
                None if in_scope => {
                    // Each local once, by the name the program gives it (the innermost first).
                    let local = self.flavour.local_name(name).to_string();
                    if !all.iter().any(|a| a["name"] == local.as_str()) {
                        v["name"] = local.into();
                        all.push(v);
                    }
                }
                None => all.push(v),
                Some(true) => {
                    let members = self.variables_of(&v["variablesReference"])?;
                    let names = members.into_iter().filter(|m| {
                        self.flavour
                            .group(m["name"].as_str().unwrap_or_default(), in_scope)
                            .is_none()
                    });
                    all.extend(names);
                }
                Some(false) => {}
            }
        }
        let flavour = self.flavour.clone();
        let mut previews = Vec::with_capacity(all.len());
        for v in &all {
            let mut children = |reference: &Value| {
                let arguments = json!({"variablesReference": reference, "count": SHOWN + 1});
                let listed = self.request("variables", arguments).unwrap_or_default();
                listed["variables"].as_array().cloned().unwrap_or_default()
            };
            previews.push(preview(&flavour, v, &mut children));
        }
        let all = all
            .into_iter()
            .zip(previews)
            .map(|(v, text)| {
                let kind = v["type"].as_str().unwrap_or_default().to_string();
                let value = self.flavour.value(&kind, &text);
                Variable {
                    name: v["name"].as_str().unwrap_or_default().into(),
                    kind,
                    value,
                    expandable: v["variablesReference"].as_i64().is_some_and(|r| r > 0),
                    scope: None,
                }
            })
            .collect();
        Ok(Variable::page(all, start, max))
    }

    /// The adapter's `variables` of a reference, as it lists them.
    pub(super) fn variables_of(&mut self, reference: &Value) -> Result<Vec<Value>, Failure> {
        if reference.as_i64().is_none_or(|r| r <= 0) {
            return Ok(Vec::new());
        }
        let answer = self.request("variables", json!({"variablesReference": reference}))?;
        Ok(answer["variables"].as_array().cloned().unwrap_or_default())
    }
}
