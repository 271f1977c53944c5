//! Watchpoints through an adapter's data breakpoints (`dataBreakpointInfo`,
//! `setDataBreakpoints`): lldb-dap's, on a variable's or field's address.

use serde_json::{json, Value};

use super::{Dap, Paused};
use crate::dap::flavour::Flavour;
use crate::debugger::{Code, Failure};

impl<F: Flavour> Dap<F> {
    /// `dataBreakpointInfo` on the expression's address (lldb-dap reads a bare name as an
    /// address), then every armed watchpoint in one `setDataBreakpoints`. The value is read
    /// back through the address, typed: `*((double *)0x7ffc…)`.
    pub(super) fn watch(
        &mut self,
        id: &str,
        expression: &str,
        access: &str,
        paused: &Paused,
    ) -> Result<String, Failure> {
        if !self.data_breakpoints {
            return Err(Failure::new(
                Code::Unsupported,
                format!(
                    "{} has no data breakpoints (`supportsDataBreakpoints`): it cannot watch \
                     `{expression}`; set a breakpoint with a condition on the lines that change \
                     it, or debug-watch the expression",
                    self.flavour.adapter()
                ),
            ));
        }
        self.on = paused.connection;
        let frame = paused.frame_id(0);
        let address = format!("&({expression})");
        let pointer = self.request(
            "evaluate",
            json!({"expression": address, "frameId": frame, "context": "watch"}),
        );
        let pointer = pointer.map_err(|f| {
            Failure::new(
                Code::InvalidExpression,
                format!("`{expression}` has no address: {}", f.message()),
            )
            .with("field", "data".into())
        })?;
        let kind = pointer["type"].as_str().unwrap_or_default();
        let at =
            pointer["result"].as_str().unwrap_or_default().split(' ').next().unwrap_or_default();
        if kind.is_empty() || !at.starts_with("0x") {
            return Err(Failure::new(
                Code::InvalidExpression,
                format!("`{expression}` is not a variable or field with an address ({kind} {at})"),
            )
            .with("field", "data".into()));
        }
        let info =
            self.request("dataBreakpointInfo", json!({"name": address, "frameId": frame}))?;
        let Some(data_id) = info.get("dataId").filter(|d| !d.is_null()).cloned() else {
            let why = info["description"].as_str().unwrap_or("no reason given");
            return Err(Failure::new(
                Code::InvalidExpression,
                format!("{} cannot watch `{expression}`: {why}", self.flavour.adapter()),
            )
            .with("field", "data".into()));
        };
        self.watching.push((id.to_string(), data_id, access.to_string()));
        if let Err(failure) = self.sync_watchpoints() {
            self.watching.pop();
            return Err(failure);
        }
        Ok(format!("*(({kind}){at})"))
    }

    /// Sends every armed watchpoint; an adapter that refuses one (the hardware has a few
    /// watch registers) says why.
    pub(super) fn sync_watchpoints(&mut self) -> Result<(), Failure> {
        self.on = 0;
        let breakpoints: Vec<Value> = self
            .watching
            .iter()
            .map(|(_, data_id, access)| json!({"dataId": data_id, "accessType": access}))
            .collect();
        let answer = self.request("setDataBreakpoints", json!({"breakpoints": breakpoints}))?;
        let refused = answer["breakpoints"]
            .as_array()
            .into_iter()
            .flatten()
            .position(|b| b["verified"] != true);
        match refused {
            Some(at) => {
                let why =
                    answer["breakpoints"][at]["message"].as_str().unwrap_or("no reason given");
                Err(Failure::new(
                    Code::Unsupported,
                    format!(
                        "{} could not arm watchpoint {}: {why}",
                        self.flavour.adapter(),
                        self.watching[at].0
                    ),
                ))
            }
            None => Ok(()),
        }
    }
}
