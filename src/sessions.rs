//! The registry of debug sessions that outlive a tool call (`debug-launch` ... `debug-stop`).
//!
//! Each session is a thread (`cdp/session.rs`) that owns its debuggee and inspector connection;
//! the registry keeps only the way to reach it (a command channel), a summary for
//! `debug-sessions`, and the thread's handle. Tool calls look a session up, send it a command
//! and wait for the reply on their own thread. Dropping a [`Handle`] closes its command channel,
//! which ends the session (its program is killed) and joins the thread; dropping the registry
//! does that for every session, which is how server exit ends them all.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use crossbeam_channel::Sender;
use serde_json::Value;

use crate::cdp::session::Command;
use crate::thread::JoinOnDrop;

/// At most this many sessions at once.
pub(crate) const MAX_SESSIONS: usize = 10;

pub(crate) struct Handle {
    pub(crate) commands: Sender<Command>,
    /// `{sessionId, state, ...}`, kept current by the session thread.
    pub(crate) summary: Arc<Mutex<Value>>,
    /// Held only to be joined on drop, after `commands` closes.
    pub(crate) _thread: JoinOnDrop,
}

#[derive(Clone, Default)]
pub(crate) struct Sessions(Arc<Mutex<Registry>>);

#[derive(Default)]
struct Registry {
    next: u64,
    live: BTreeMap<String, Handle>,
}

impl Sessions {
    /// Reserves the next id, or says why no session can start.
    pub(crate) fn next_id(&self) -> Result<String, String> {
        let mut registry = self.0.lock().expect("session registry poisoned");
        if registry.live.len() >= MAX_SESSIONS {
            return Err(format!(
                "{} sessions are already open (the most at once): end one with debug-stop",
                registry.live.len()
            ));
        }
        registry.next += 1;
        Ok(format!("s{}", registry.next))
    }

    pub(crate) fn insert(&self, id: String, handle: Handle) {
        self.0.lock().expect("session registry poisoned").live.insert(id, handle);
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
        self.0.lock().expect("session registry poisoned").live.remove(id)
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
    }
}
