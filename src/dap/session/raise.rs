//! Where `pauseOnExceptions: all` stops: once per exception, where it is raised.

use serde_json::{json, Value};

/// An exception stop for `pauseOnExceptions: all` (DAP's `raised`): the exception and where.
/// pydevd stops again in every frame the exception unwinds through, and DAP cannot ask it to
/// stop at the first raise only.
pub(super) struct Raise {
    thread: Value,
    exception: Value,
    /// Each frame's file, function and line, innermost first.
    frames: Vec<Value>,
}

impl Raise {
    pub(super) fn new(thread: &Value, info: &Value, frames: &[Value]) -> Raise {
        Raise {
            thread: thread.clone(),
            exception: json!([info["exceptionId"], info["description"]]),
            frames: frames
                .iter()
                .map(|f| json!([f.pointer("/source/path"), f["name"], f["line"]]))
                .collect(),
        }
    }

    /// Whether this is `earlier`'s exception, further out: the same exception on the same
    /// thread, its frames the outer part of `earlier`'s (the stacks may be cut at the bottom).
    pub(super) fn unwinds(&self, earlier: &Raise) -> bool {
        self.thread == earlier.thread
            && self.exception == earlier.exception
            && !self.frames.is_empty()
            && (1..earlier.frames.len())
                .any(|out| earlier.frames[out..].iter().zip(&self.frames).all(|(a, b)| a == b))
    }
}
