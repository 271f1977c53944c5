//! What one client may hold at once: running calls and open debug sessions.
//!
//! Over stdio there is one client. Over HTTP a client is a bearer token: each of its contexts
//! (its stateless one, and each handshake client's `Mcp-Session-Id`) counts against its own
//! [`Quota`] and against the token's, so one token's load never leaves another without room,
//! and the HTTP layer can tell a context that holds nothing (which may be let go) from one that
//! holds a program.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// A client's open sessions at once, unless `DEBUG_MCP_MAX_SESSIONS` says otherwise.
const SESSIONS: usize = 10;

pub(crate) fn sessions_limit() -> usize {
    std::env::var("DEBUG_MCP_MAX_SESSIONS").ok().and_then(|v| v.parse().ok()).unwrap_or(SESSIONS)
}

/// Counts of what is held, against limits; a context's quota has its token's as parent.
#[derive(Debug)]
pub(crate) struct Quota {
    calls: Counter,
    sessions: Counter,
    parent: Option<Arc<Quota>>,
}

#[derive(Debug)]
struct Counter {
    held: AtomicUsize,
    limit: usize,
}

impl Counter {
    fn new(limit: usize) -> Counter {
        Counter { held: AtomicUsize::new(0), limit }
    }

    /// One more, unless the limit is reached.
    fn take(&self) -> bool {
        self.held
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| (n < self.limit).then_some(n + 1))
            .is_ok()
    }

    fn give_back(&self) {
        self.held.fetch_sub(1, Ordering::SeqCst);
    }
}

/// What is taken: a call or a session, for as long as this lives.
#[derive(Debug)]
pub(crate) struct Held {
    quota: Arc<Quota>,
    what: What,
}

#[derive(Debug, Clone, Copy)]
enum What {
    Call,
    Session,
}

impl Quota {
    /// A client of its own: `calls` running calls and `sessions` sessions at once.
    pub(crate) fn new(calls: usize, sessions: usize) -> Arc<Quota> {
        Arc::new(Quota {
            calls: Counter::new(calls),
            sessions: Counter::new(sessions),
            parent: None,
        })
    }

    /// A context of the client `parent`: unlimited by itself, counted there too.
    pub(crate) fn within(parent: &Arc<Quota>) -> Arc<Quota> {
        Arc::new(Quota {
            calls: Counter::new(usize::MAX),
            sessions: Counter::new(usize::MAX),
            parent: Some(parent.clone()),
        })
    }

    /// Takes a running call, or says why not.
    pub(crate) fn call(self: &Arc<Quota>) -> Result<Held, String> {
        self.take(What::Call).ok_or_else(|| {
            let limit = self.top().calls.limit;
            format!(
                "{limit} calls of this client are running (the most at once): wait for one to \
                 end, or cancel one"
            )
        })
    }

    /// Takes an open session, or says why not.
    pub(crate) fn session(self: &Arc<Quota>) -> Result<Held, String> {
        self.take(What::Session).ok_or_else(|| {
            let limit = self.top().sessions.limit;
            format!(
                "{limit} sessions of this client are open (the most at once): end one with \
                 debug-stop"
            )
        })
    }

    /// Whether nothing is held here: no call runs, no session is open.
    pub(crate) fn is_idle(&self) -> bool {
        self.calls.held.load(Ordering::SeqCst) == 0
            && self.sessions.held.load(Ordering::SeqCst) == 0
    }

    fn top(&self) -> &Quota {
        self.parent.as_deref().map_or(self, Quota::top)
    }

    fn counter(&self, what: What) -> &Counter {
        match what {
            What::Call => &self.calls,
            What::Session => &self.sessions,
        }
    }

    fn take(self: &Arc<Quota>, what: What) -> Option<Held> {
        if !self.counter(what).take() {
            return None;
        }
        if let Some(parent) = &self.parent {
            if !parent.counter(what).take() {
                self.counter(what).give_back();
                return None;
            }
        }
        Some(Held { quota: self.clone(), what })
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.quota.counter(self.what).give_back();
        if let Some(parent) = &self.quota.parent {
            parent.counter(self.what).give_back();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_limits_all_its_contexts_together_and_each_knows_what_it_holds() {
        let token = Quota::new(2, 1);
        let (a, b) = (Quota::within(&token), Quota::within(&token));
        let first = a.call().unwrap();
        let _second = b.call().unwrap();
        assert!(a.call().unwrap_err().contains("2 calls of this client are running"));
        assert!(!a.is_idle() && !b.is_idle());
        drop(first);
        assert!(a.is_idle());
        let _third = a.call().unwrap();
        let session = b.session().unwrap();
        assert!(a.session().unwrap_err().contains("1 sessions"));
        drop(session);
        let _session = a.session().unwrap();
        // Another token is untouched.
        let other = Quota::within(&Quota::new(2, 1));
        let _theirs = (other.call().unwrap(), other.call().unwrap(), other.session().unwrap());
    }
}
