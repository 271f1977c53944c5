//! A paused JavaScript thread's stack for `debug-stack`: its frames, then (`includeAsync`) the
//! callers it had when each awaited operation began (V8's `asyncStackTrace` chain). The first
//! frame of each such segment says why the code there continues (`await`, `setTimeout`):
//! the frames after it in the segment called it synchronously and have returned since.

use serde_json::{json, Value};

use super::{Cdp, Paused};
use crate::cdp::scripts::{awaiting_frame, Scripts};
use crate::cdp::urls::is_own;
use crate::cdp::{unhandled, Origin};
use crate::debugger::model::{Frame, TraceFrame};

impl Cdp {
    /// The stack of a stop, as an exception's traceback.
    pub(super) fn trace(&mut self, paused: &Paused) -> Vec<TraceFrame> {
        let frames = paused.params["callFrames"].as_array().cloned().unwrap_or_default();
        let urls = self.runtime.urls();
        let mut scripts = self.targets.get_mut(&paused.at).map(|t| &mut t.scripts);
        let mut fallback = Scripts::new(urls);
        let scripts = scripts.get_or_insert(&mut fallback);
        frames
            .iter()
            .map(|frame| {
                let location = scripts.location(frame);
                let file = location.file.unwrap_or_default();
                TraceFrame {
                    function: location.function,
                    library: !is_own(&file),
                    line: u32::try_from(location.line).ok(),
                    file,
                }
            })
            .collect()
    }

    /// Whether the exception thrown at the pause `params` of `at` leaves the program's own code
    /// into a library that catches it (see `cdp::unhandled`).
    pub(super) fn leaves_own_code(&mut self, at: &Origin, params: &Value) -> bool {
        let stack = unhandled::stack(params);
        let Some(target) = self.targets.get_mut(at) else { return false };
        let files: Vec<String> =
            stack.iter().map(|f| target.scripts.location(f).file.unwrap_or_default()).collect();
        let mut catchers = std::mem::take(&mut self.catchers);
        let mut source = |script: &str| {
            let asked = json!({"scriptId": script});
            let answer = self.request_at(at, "Debugger.getScriptSource", asked).ok()?;
            answer["scriptSource"].as_str().map(String::from)
        };
        let leaves = catchers.leaves_own_code(at, &stack, &files, &mut source);
        self.catchers = catchers;
        leaves
    }
}

/// Up to `max` frames of the pause `params`, and how many there are in all.
pub(super) fn frames(
    scripts: &mut Scripts,
    params: &Value,
    max: usize,
    include_async: bool,
) -> (Vec<Frame>, usize) {
    let paused = params["callFrames"].as_array().map(Vec::as_slice).unwrap_or_default();
    let mut frames: Vec<Frame> = paused
        .iter()
        .take(max)
        .map(|frame| Frame { location: scripts.location(frame), async_reason: None })
        .collect();
    let mut total = paused.len();
    let mut link = params.get("asyncStackTrace").filter(|_| include_async);
    while let Some(trace) = link {
        let reason = trace["description"].as_str().unwrap_or("async");
        let segment = trace["callFrames"].as_array().map(Vec::as_slice).unwrap_or_default();
        for (i, frame) in segment.iter().enumerate() {
            if frames.len() >= max {
                break;
            }
            let async_reason = (i == 0).then(|| reason.to_string());
            let location = scripts.location(&awaiting_frame(frame));
            frames.push(Frame { location, async_reason });
        }
        total += segment.len();
        link = trace.get("parent");
    }
    (frames, total)
}
