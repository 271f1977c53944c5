//! The registry of debug sessions that outlive a tool call (`debug-launch` ... `debug-stop`).
//!
//! Each session is a thread (`cdp/session.rs`) that owns its debuggee and inspector connection;
//! the registry keeps only the way to reach it (a command channel), a summary for
//! `debug-sessions`, and the thread's handle. Tool calls look a session up, send it a command
//! and wait for the reply on their own thread. Dropping a [`Handle`] closes its command channel,
//! which ends the session (its program is killed) and joins the thread; dropping the registry
//! does that for every session, which is how server exit ends them all.

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crossbeam_channel::{never, Receiver, Sender};
use serde_json::{json, Value};

use crate::debugger::session::Command;
use crate::jsonrpc::{Message, Notification};
use crate::thread::JoinOnDrop;

/// At most this many sessions at once, unless `DEBUG_MCP_MAX_SESSIONS` says otherwise.
const MAX_SESSIONS: usize = 10;

fn max_sessions() -> usize {
    std::env::var("DEBUG_MCP_MAX_SESSIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(MAX_SESSIONS)
}

/// A session with no call for this long ends (its program is killed), unless
/// `DEBUG_MCP_SESSION_IDLE_MS` says otherwise.
fn idle_limit() -> Duration {
    let ms = std::env::var("DEBUG_MCP_SESSION_IDLE_MS").ok().and_then(|v| v.parse().ok());
    Duration::from_millis(ms.unwrap_or(30 * 60 * 1000))
}

/// The two clocks a session thread selects on besides its channels: the deadline of the
/// call waiting for an answer, and the idle limit, so that a session nobody calls (and
/// nobody waits on) ends and nothing runs for ever.
pub(crate) struct Clocks {
    pub(crate) idle_limit: Duration,
    last_call: Instant,
}

impl Clocks {
    pub(crate) fn start() -> Clocks {
        Clocks::with_idle_limit(idle_limit())
    }

    pub(crate) fn with_idle_limit(idle_limit: Duration) -> Clocks {
        Clocks { idle_limit, last_call: Instant::now() }
    }

    pub(crate) fn called(&mut self) {
        self.last_call = Instant::now();
    }

    /// `(waiting, idle)` for one turn of the loop: `waiting` fires at the waiting call's
    /// deadline; `idle` only while no call waits and the program has not exited.
    pub(crate) fn turn(
        &self,
        waiting: Option<Instant>,
        exited: bool,
    ) -> (Receiver<Instant>, Receiver<Instant>) {
        let idle = match (exited, waiting) {
            (true, _) | (_, Some(_)) => never(),
            _ => crossbeam_channel::at(self.last_call + self.idle_limit),
        };
        (waiting.map_or(never(), crossbeam_channel::at), idle)
    }
}

pub(crate) struct Handle {
    pub(crate) commands: Sender<Command>,
    /// `{sessionId, state, ...}`, kept current by the session thread.
    pub(crate) summary: Arc<Mutex<Value>>,
    /// Held only to be joined on drop, after `commands` closes.
    pub(crate) _thread: JoinOnDrop,
}

#[derive(Clone, Default)]
pub(crate) struct Sessions(Arc<Mutex<Registry>>, Arc<Watch>);

/// Resource subscriptions (`debug://...` URIs) and where to send their updates; session
/// threads call [`Watch::changed`] when their state changes.
#[derive(Default)]
pub(crate) struct Watch {
    subscribed: Mutex<HashSet<String>>,
    out: Mutex<Option<Sender<Message>>>,
}

pub(crate) const SESSIONS_URI: &str = "debug://sessions";

impl Watch {
    fn send(&self, notification: Notification) {
        if let Some(out) = self.out.lock().expect("watch poisoned").as_ref() {
            let _ = out.send(notification.into());
        }
    }

    /// Session `id` changed: tell subscribers of it and of the list.
    pub(crate) fn changed(&self, id: &str) {
        let uris = [format!("{SESSIONS_URI}/{id}"), SESSIONS_URI.to_string()];
        let subscribed: Vec<String> = {
            let set = self.subscribed.lock().expect("watch poisoned");
            uris.into_iter().filter(|u| set.contains(u)).collect()
        };
        for uri in subscribed {
            self.send(Notification::new(
                "notifications/resources/updated",
                serde_json::json!({"uri": uri}),
            ));
        }
    }

    fn list_changed(&self) {
        self.send(Notification::new("notifications/resources/list_changed", Value::Null));
    }
}

#[derive(Default)]
struct Registry {
    next: u64,
    live: BTreeMap<String, Handle>,
}

impl Sessions {
    /// Reserves the next id, or says why no session can start.
    pub(crate) fn next_id(&self) -> Result<String, String> {
        let mut registry = self.0.lock().expect("session registry poisoned");
        if registry.live.len() >= max_sessions() {
            return Err(format!(
                "{} sessions are already open (the most at once): end one with debug-stop",
                registry.live.len()
            ));
        }
        registry.next += 1;
        Ok(format!("s{}", registry.next))
    }

    pub(crate) fn insert(&self, id: String, handle: Handle) {
        self.0.lock().expect("session registry poisoned").live.insert(id.clone(), handle);
        self.1.list_changed();
        self.1.changed(&id);
    }

    pub(crate) fn watch(&self) -> Arc<Watch> {
        self.1.clone()
    }

    /// Where resource notifications go (the server's stdout channel).
    pub(crate) fn notify_to(&self, out: Sender<Message>) {
        *self.1.out.lock().expect("watch poisoned") = Some(out);
    }

    pub(crate) fn subscribe(&self, uri: &str, on: bool) {
        let mut set = self.1.subscribed.lock().expect("watch poisoned");
        if on {
            set.insert(uri.to_string());
        } else {
            set.remove(uri);
        }
    }

    /// The summary of one session.
    pub(crate) fn get(&self, id: &str) -> Option<Value> {
        let registry = self.0.lock().expect("session registry poisoned");
        registry.live.get(id).map(|h| h.summary.lock().expect("session summary poisoned").clone())
    }

    /// The session `id`, or the only one when `id` is `None`; with its command channel.
    pub(crate) fn find(&self, id: Option<&str>) -> Result<(String, Sender<Command>), String> {
        let registry = self.0.lock().expect("session registry poisoned");
        let (id, handle) = match id {
            Some(id) => registry.live.get_key_value(id).ok_or_else(|| {
                let known: Vec<&str> = registry.live.keys().map(String::as_str).collect();
                match known.is_empty() {
                    true => format!("no session {id}: none is open; start one with debug-launch"),
                    false => format!("no session {id}: open sessions are {}", known.join(", ")),
                }
            })?,
            None => match registry.live.len() {
                1 => registry.live.iter().next().expect("one session"),
                0 => return Err("no session is open: start one with debug-launch".into()),
                n => {
                    let known: Vec<&str> = registry.live.keys().map(String::as_str).collect();
                    return Err(format!(
                        "{n} sessions are open ({}): say which with `sessionId`",
                        known.join(", ")
                    ));
                }
            },
        };
        Ok((id.clone(), handle.commands.clone()))
    }

    /// Removes a session; dropping what comes back ends it.
    pub(crate) fn remove(&self, id: &str) -> Option<Handle> {
        let handle = self.0.lock().expect("session registry poisoned").live.remove(id);
        if handle.is_some() {
            self.1.list_changed();
            self.1.changed(id);
        }
        handle
    }

    /// Every session's summary, by id.
    pub(crate) fn list(&self) -> Vec<Value> {
        let registry = self.0.lock().expect("session registry poisoned");
        registry
            .live
            .values()
            .map(|h| h.summary.lock().expect("session summary poisoned").clone())
            .collect()
    }

    /// Ends every session (server exit). The handles drop outside the lock.
    pub(crate) fn end_all(&self) {
        let live = std::mem::take(&mut self.0.lock().expect("session registry poisoned").live);
        drop(live);
        // The stdout channel must close for the writer to finish.
        self.1.out.lock().expect("watch poisoned").take();
    }
}

/// The state a waiting call answers when nothing stopped the program while it waited (which
/// may be no time at all: an attach without breakpoints answers at once).
pub(crate) fn running_state(id: &str) -> Value {
    json!({"sessionId": id, "state": "running",
           "message": "the program is running: nothing stopped it while this call waited. Call \
                       debug-pause to stop it, debug-continue to wait for the next stop, or \
                       debug-output to read what it printed"})
}
