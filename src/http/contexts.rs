//! The clients of an HTTP server: one context per stateless client (its bearer token) and per
//! handshake client (its `Mcp-Session-Id`), each running the stdio server's loop over
//! channels; and what each token may hold.
//!
//! Every limit is a token's: its running calls and open debug sessions (`quota.rs`, counted
//! across its contexts) and its handshake contexts. A token past its contexts' limit lets go of
//! its own context unused longest that holds nothing (no call, no session); when each holds a
//! program, it is refused. So one token's load never ends, shuts out or reads another's work.
//! Without tokens every client is one client.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crossbeam_channel::{Receiver, Sender};
use serde_json::Value;

use crate::jsonrpc::{Message, RequestId};
use crate::quota::{self, Quota};
use crate::server::{self, Connection};
use crate::stdio;
use crate::thread::JoinOnDrop;

/// Handshake clients' contexts one token may have at once.
pub(crate) const HANDSHAKES_PER_TOKEN: usize = 64;
/// Calls one token may have running at once.
pub(crate) const CALLS_PER_TOKEN: usize = 64;

/// One client's server: the stdio loop over channels, and the POSTs waiting for its answers.
pub(crate) struct Context {
    /// The token that made it (a session is only used with its own token).
    pub(crate) token: String,
    incoming: Mutex<Option<Sender<stdio::Incoming>>>,
    pub(crate) waiting: Arc<Mutex<HashMap<String, Waiting>>>,
    threads: Mutex<Vec<JoinOnDrop>>,
    /// What it holds (within its token's quota).
    quota: Arc<Quota>,
    /// When it was last used (the server's request counter then).
    used: AtomicU64,
}

/// A POST waiting for its answer: where its messages go, and its client's own request id and
/// progress token.
pub(crate) struct Waiting {
    pub(crate) to: Sender<Message>,
    pub(crate) id: RequestId,
    pub(crate) progress: Option<Value>,
}

impl Context {
    fn start(token: &str, within: &Arc<Quota>) -> Arc<Context> {
        let (incoming_tx, incoming) = crossbeam_channel::unbounded();
        let (out, answers) = crossbeam_channel::unbounded();
        let waiting: Arc<Mutex<HashMap<String, Waiting>>> = Arc::default();
        let quota = Quota::within(within);
        let serve = JoinOnDrop::spawn("http-context", {
            let quota = quota.clone();
            move || server::serve(Connection { incoming, out }, &quota, &crossbeam_channel::never())
        });
        let route = JoinOnDrop::spawn("http-route", {
            let waiting = waiting.clone();
            move || route(&answers, &waiting)
        });
        Arc::new(Context {
            token: token.to_string(),
            incoming: Mutex::new(Some(incoming_tx)),
            waiting,
            threads: Mutex::new(vec![serve, route]),
            quota,
            used: AtomicU64::new(0),
        })
    }

    pub(crate) fn send(&self, message: Message) -> bool {
        let incoming = self.incoming.lock().unwrap_or_else(|e| e.into_inner());
        incoming.as_ref().is_some_and(|tx| tx.send(Ok(message)).is_ok())
    }

    pub(crate) fn touch(&self, now: u64) {
        self.used.store(now, Ordering::Relaxed);
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        // The loop ends as at stdin's end: every call cancelled, every session ended.
        self.incoming.lock().unwrap_or_else(|e| e.into_inner()).take();
        let threads = std::mem::take(&mut *self.threads.lock().unwrap_or_else(|e| e.into_inner()));
        drop(threads);
    }
}

/// Hands each message of a context's loop to the POST it answers: a response by its id, a
/// progress notification by its token, a log message to every POST waiting; the rest (list
/// changes: no client listens for them here) is dropped.
fn route(answers: &Receiver<Message>, waiting: &Mutex<HashMap<String, Waiting>>) {
    for message in answers {
        let mut waiting = waiting.lock().unwrap_or_else(|e| e.into_inner());
        match message {
            Message::Response(mut response) => {
                let internal = response.id.as_ref().and_then(RequestId::as_str).unwrap_or_default();
                if let Some(post) = waiting.remove(internal) {
                    response.id = Some(post.id);
                    let _ = post.to.send(Message::Response(response));
                }
            }
            Message::Notification(mut notification) => {
                let token = notification.params.pointer("/progressToken").and_then(Value::as_str);
                if let Some(post) = token.and_then(|token| waiting.get(token)) {
                    notification.params["progressToken"] =
                        post.progress.clone().unwrap_or(Value::Null);
                    let _ = post.to.send(Message::Notification(notification));
                } else if notification.method == "notifications/message" {
                    for post in waiting.values() {
                        let _ = post.to.send(Message::Notification(notification.clone()));
                    }
                }
            }
            Message::Request(_) => {}
        }
    }
}

/// Every context, by key (`token:<token>` for a stateless client, `session:<id>` for a
/// handshake client), and each token's quota.
#[derive(Default)]
pub(crate) struct Contexts {
    open: Mutex<Open>,
}

#[derive(Default)]
struct Open {
    contexts: HashMap<String, Arc<Context>>,
    quotas: HashMap<String, Arc<Quota>>,
}

impl Open {
    fn quota(&mut self, token: &str) -> Arc<Quota> {
        self.quotas
            .entry(token.to_string())
            .or_insert_with(|| Quota::new(CALLS_PER_TOKEN, quota::sessions_limit()))
            .clone()
    }
}

/// Why a handshake client gets no context.
pub(crate) struct Full;

/// A handshake client's new context: its id, the context, and the one let go for it (to be
/// ended outside any lock).
pub(crate) struct Started {
    pub(crate) id: String,
    pub(crate) context: Arc<Context>,
    pub(crate) ended: Option<Arc<Context>>,
}

impl Contexts {
    /// The stateless context of `token`, made on first use.
    pub(crate) fn of_token(&self, token: &str) -> Arc<Context> {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let key = format!("token:{token}");
        if let Some(context) = open.contexts.get(&key) {
            return context.clone();
        }
        let context = Context::start(token, &open.quota(token));
        open.contexts.insert(key, context.clone());
        context
    }

    /// A handshake client's context, `session` its id, when it was made with `token`.
    pub(crate) fn of_session(&self, session: &str, token: &str) -> Option<Arc<Context>> {
        let open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let context = open.contexts.get(&format!("session:{session}"))?;
        (context.token == token).then(|| context.clone())
    }

    /// A new handshake client's context for `token`. At the token's limit, its context unused
    /// longest that holds nothing is let go; when every one holds something, none is made.
    pub(crate) fn start_session(&self, token: &str) -> Result<Started, Full> {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let own: Vec<(&String, &Arc<Context>)> = open
            .contexts
            .iter()
            .filter(|(key, context)| key.starts_with("session:") && context.token == token)
            .collect();
        let mut ended = None;
        if own.len() >= HANDSHAKES_PER_TOKEN {
            let unused = own
                .iter()
                .filter(|(_, context)| context.quota.is_idle())
                .min_by_key(|(_, context)| context.used.load(Ordering::Relaxed))
                .map(|(key, _)| (*key).clone());
            let Some(key) = unused else { return Err(Full) };
            ended = open.contexts.remove(&key);
        }
        let id = format!("{:016x}{:016x}", crate::sys::random(), crate::sys::random());
        let context = Context::start(token, &open.quota(token));
        open.contexts.insert(format!("session:{id}"), context.clone());
        Ok(Started { id, context, ended })
    }

    /// Removes a handshake client's context (DELETE) when it was made with `token`; dropping
    /// what comes back ends it.
    pub(crate) fn end_session(&self, session: &str, token: &str) -> Option<Arc<Context>> {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let key = format!("session:{session}");
        match open.contexts.get(&key) {
            Some(context) if context.token == token => open.contexts.remove(&key),
            _ => None,
        }
    }

    /// Every context, taken out to be ended (the server is ending).
    pub(crate) fn take_all(&self) -> Vec<Arc<Context>> {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        open.contexts.drain().map(|(_, context)| context).collect()
    }
}
