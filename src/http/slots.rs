//! The connections served at once, and who gives way when there are too many.
//!
//! A connection is *waiting* while it has no request being answered: between two requests
//! (keep-alive), or while its request arrives. It is *working* while its request is handled
//! (a tool call runs), and then it holds its client's share of calls (`quota.rs`), which is
//! capped per token; waiting ones are capped here, in all and per peer address. A newcomer
//! past a cap takes the slot of the connection that has waited longest (that peer's own, when
//! it is the peer that is past its cap), which is closed: a client that holds idle keep-alive
//! connections, or trickles a request in, cannot shut others out; a client whose keep-alive
//! connection went reconnects, as it does when any server closes an idle one. Only when every
//! slot is working is a newcomer refused, with a readable 503.

use std::collections::HashMap;
use std::net::{IpAddr, TcpStream};
use std::sync::Mutex;
use std::time::Instant;

/// How many connections at once: waiting ones in all and from one peer address, and all of
/// them whatever they do (past it, newcomers are refused).
#[derive(Clone, Copy)]
pub(crate) struct Limits {
    pub(crate) waiting: usize,
    pub(crate) per_peer: usize,
    pub(crate) open: usize,
}

pub(crate) const LIMITS: Limits = Limits { waiting: 256, per_peer: 64, open: 2048 };

pub(crate) struct Slots(Mutex<Open>, Limits);

#[derive(Default)]
struct Open {
    next: u64,
    slots: HashMap<u64, Slot>,
}

struct Slot {
    peer: IpAddr,
    /// A handle on the connection, to close it when it gives way or the server ends.
    stream: TcpStream,
    working: bool,
    /// When it began waiting (or working).
    since: Instant,
}

impl Open {
    fn waiting(&self, peer: Option<IpAddr>) -> impl Iterator<Item = (&u64, &Slot)> {
        self.slots.iter().filter(move |(_, s)| !s.working && peer.is_none_or(|p| s.peer == p))
    }

    /// Closes the connection of `peer` (or anyone's) that has waited longest.
    fn give_way(&mut self, peer: Option<IpAddr>) -> bool {
        let oldest = self.waiting(peer).min_by_key(|(_, s)| s.since).map(|(n, _)| *n);
        let Some(slot) = oldest.and_then(|n| self.slots.remove(&n)) else { return false };
        let _ = slot.stream.shutdown(std::net::Shutdown::Both);
        true
    }
}

impl Slots {
    pub(crate) fn new(limits: Limits) -> Slots {
        Slots(Mutex::default(), limits)
    }

    /// A slot for a new connection from `peer` (waiting), making room if it must; `None` when
    /// every slot is working.
    pub(crate) fn admit(&self, stream: &TcpStream, peer: IpAddr) -> Option<u64> {
        let limits = self.1;
        let mut open = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if open.waiting(Some(peer)).count() >= limits.per_peer {
            open.give_way(Some(peer));
        }
        if open.waiting(None).count() >= limits.waiting {
            open.give_way(None);
        }
        if open.slots.len() >= limits.open && !open.give_way(None) {
            return None;
        }
        let stream = stream.try_clone().ok()?;
        open.next += 1;
        let number = open.next;
        open.slots.insert(number, Slot { peer, stream, working: false, since: Instant::now() });
        Some(number)
    }

    /// Marks connection `number` working (`true`) or waiting; false when it was closed to make
    /// room meanwhile.
    pub(crate) fn mark(&self, number: u64, working: bool) -> bool {
        let mut open = self.0.lock().unwrap_or_else(|e| e.into_inner());
        match open.slots.get_mut(&number) {
            Some(slot) => {
                slot.working = working;
                slot.since = Instant::now();
                true
            }
            None => false,
        }
    }

    pub(crate) fn release(&self, number: u64) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).slots.remove(&number);
    }

    /// Closes every connection (the server is ending).
    pub(crate) fn close_all(&self) {
        for slot in self.0.lock().unwrap_or_else(|e| e.into_inner()).slots.values() {
            let _ = slot.stream.shutdown(std::net::Shutdown::Both);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    #[test]
    fn waiting_connections_give_way_to_newcomers_and_working_ones_do_not() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        let mut clients = Vec::new();
        let mut connect = || {
            let client = TcpStream::connect(address).unwrap();
            let (server, _) = listener.accept().unwrap();
            clients.push(client);
            server
        };
        let closed = |stream: &TcpStream| {
            let mut byte = [0u8; 1];
            matches!(std::io::Read::read(&mut &*stream, &mut byte), Ok(0))
        };
        let slots = Slots::new(Limits { waiting: 4, per_peer: 3, open: 6 });
        let (me, other): (IpAddr, IpAddr) =
            ("127.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap());
        let mine: Vec<(TcpStream, u64)> = (0..3)
            .map(|_| {
                let stream = connect();
                let number = slots.admit(&stream, me).unwrap();
                (stream, number)
            })
            .collect();
        // Another peer is not held back by this one's connections.
        let theirs = slots.admit(&connect(), other).unwrap();
        // This peer is at its cap: its longest waiting connection gives way, not another's.
        let newcomer = slots.admit(&connect(), me).unwrap();
        assert!(closed(&mine[0].0) && !slots.mark(mine[0].1, false));
        // Four wait in all: the one that has waited longest gives way, whoever's it is.
        assert!(slots.mark(theirs, false));
        let another = slots.admit(&connect(), other).unwrap();
        assert!(closed(&mine[1].0) && !slots.mark(mine[1].1, false));
        // Working connections never give way: with every one working, a newcomer is refused.
        for number in [mine[2].1, theirs, newcomer, another] {
            assert!(slots.mark(number, true));
        }
        let fifth = slots.admit(&connect(), me).unwrap();
        assert!(slots.mark(fifth, true));
        let sixth = slots.admit(&connect(), other).unwrap();
        assert!(slots.mark(sixth, true));
        assert!(slots.admit(&connect(), me).is_none(), "every slot is working");
        slots.release(sixth);
        assert!(slots.admit(&connect(), me).is_some());
    }
}
