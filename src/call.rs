//! What a running call carries besides its arguments ([`Call`]): the cancel signal to select
//! on, and progress notifications and log messages to the client. The debugger core and the
//! runtimes take it; it depends on none of them (the tools add the session registry).

use std::cell::Cell;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};
use serde_json::{json, Value};

use crate::jsonrpc::{Message, Notification};

/// What a running tool call can use besides its arguments.
pub(crate) struct Call {
    /// Receives (or disconnects) when the call is cancelled: select on it.
    pub(crate) cancel: Receiver<()>,
    pub(crate) progress: Progress,
    pub(crate) log: ClientLog,
}

/// `notifications/progress` for one call, when the client asked with `_meta.progressToken`.
/// Reports are spaced out (a 10,000-hit loop must not send 10,000 notifications) and strictly
/// increasing, as the spec requires.
pub(crate) struct Progress {
    token: Option<Value>,
    out: Sender<Message>,
    last_sent: Cell<Option<(Instant, u64)>>,
}

const PROGRESS_EVERY: Duration = Duration::from_millis(100);

impl Progress {
    pub(crate) fn new(token: Option<Value>, out: Sender<Message>) -> Progress {
        Progress { token, out, last_sent: Cell::new(None) }
    }

    pub(crate) fn report(&self, progress: u64, message: impl FnOnce() -> String) {
        let Some(token) = &self.token else { return };
        let now = Instant::now();
        if let Some((at, value)) = self.last_sent.get() {
            if progress <= value || now.duration_since(at) < PROGRESS_EVERY {
                return;
            }
        }
        self.last_sent.set(Some((now, progress)));
        let params = json!({"progressToken": token, "progress": progress, "message": message()});
        let _ = self.out.send(Notification::new("notifications/progress", params).into());
    }
}

/// MCP log levels (RFC 5424 severities), lowest first.
pub(crate) const LOG_LEVELS: [&str; 8] =
    ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"];

/// `notifications/message` to the client, at or above the level it set with `logging/setLevel`.
#[derive(Clone)]
pub(crate) struct ClientLog {
    pub(crate) level: Arc<AtomicU8>,
    pub(crate) out: Sender<Message>,
}

impl ClientLog {
    pub(crate) fn send(&self, level: &str, data: String) {
        let rank = LOG_LEVELS.iter().position(|l| *l == level).unwrap_or(0);
        if rank < usize::from(self.level.load(Ordering::Relaxed)) {
            return;
        }
        let params = json!({"level": level, "logger": "debug-mcp", "data": data});
        let _ = self.out.send(Notification::new("notifications/message", params).into());
    }
}
