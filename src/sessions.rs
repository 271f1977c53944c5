//! The registry of debug sessions that outlive a tool call (`debug-launch` ... `debug-stop`).
//!
//! Each session is a thread running the session actor (`debugger/session.rs`) over a runtime's
//! backend, which owns its debuggee and debugger connection;
//! the registry keeps only the way to reach it (a command channel), a summary for
//! `debug-sessions`, and the thread's handle. Tool calls look a session up, send it a command
//! and wait for the reply on their own thread. Dropping a [`Handle`] closes its command channel,
//! which ends the session (its program is killed) and joins the thread; dropping the registry
//! does that for every session, which is how server exit ends them all.

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};

use crossbeam_channel::Sender;
use serde_json::Value;

use crate::debugger::session::{Command, Handle};
use crate::jsonrpc::{Message, Notification};
use crate::quota::{self, Held, Quota};

/// The sessions of one client context, counted against its quota (which may be shared with the
/// client's other contexts: an HTTP token's).
#[derive(Clone)]
pub(crate) struct Sessions(Arc<Mutex<Registry>>, Arc<Watch>, Arc<Quota>);

impl Default for Sessions {
    /// A client of its own (stdio, a one-shot `run`).
    fn default() -> Sessions {
        Sessions::counted_in(Quota::new(usize::MAX, quota::sessions_limit()))
    }
}

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
    /// Each live session's place in the quota.
    held: BTreeMap<String, Held>,
}

impl Sessions {
    /// The sessions of a context whose client is counted in `quota`.
    pub(crate) fn counted_in(quota: Arc<Quota>) -> Sessions {
        Sessions(Arc::default(), Arc::default(), quota)
    }

    /// Reserves the next id and a place in the quota (given back when what comes back drops,
    /// unless the session is inserted with it), or says why no session can start.
    pub(crate) fn next_id(&self) -> Result<(String, Held), String> {
        let held = self.2.session()?;
        let mut registry = self.0.lock().expect("session registry poisoned");
        registry.next += 1;
        Ok((format!("s{}", registry.next), held))
    }

    pub(crate) fn insert(&self, id: String, handle: Handle, held: Held) {
        let mut registry = self.0.lock().expect("session registry poisoned");
        registry.held.insert(id.clone(), held);
        registry.live.insert(id.clone(), handle);
        drop(registry);
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
        let mut registry = self.0.lock().expect("session registry poisoned");
        let handle = registry.live.remove(id);
        registry.held.remove(id);
        drop(registry);
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
        let mut registry = self.0.lock().expect("session registry poisoned");
        let (live, held) = (std::mem::take(&mut registry.live), std::mem::take(&mut registry.held));
        drop(registry);
        drop(live);
        drop(held);
        // The stdout channel must close for the writer to finish.
        self.1.out.lock().expect("watch poisoned").take();
    }
}
