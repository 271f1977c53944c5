//! A paused JavaScript thread's stack for `debug-stack`: its frames, then (`includeAsync`) the
//! callers it had when each awaited operation began (V8's `asyncStackTrace` chain). The first
//! frame of each such segment says why the code there continues (`await`, `setTimeout`):
//! the frames after it in the segment called it synchronously and have returned since.

use serde_json::{json, Value};

use crate::cdp::scripts::Scripts;
use crate::debugger::model::Frame;

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
            // Async frames carry their location flat; shape it like a paused frame's.
            let shaped = json!({"functionName": frame["functionName"], "url": frame["url"],
                "location": {"scriptId": frame["scriptId"], "lineNumber": frame["lineNumber"],
                             "columnNumber": frame["columnNumber"]}});
            let async_reason = (i == 0).then(|| reason.to_string());
            frames.push(Frame { location: scripts.location(&shaped), async_reason });
        }
        total += segment.len();
        link = trace.get("parent");
    }
    (frames, total)
}
