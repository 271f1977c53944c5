//! The processes and workers a launched program starts, each followed as a thread of the
//! session: adopted (set up with every session breakpoint, then let go), connected to when a
//! process reports its inspector, forgotten when it ends.

use serde_json::json;

use super::{Cdp, Conn, Target, REQUEST_TIMEOUT};
use crate::cdp::follow::Report;
use crate::cdp::{Client, Origin};
use crate::log;

impl Cdp {
    /// Sets up a thread that started and waits (a followed process, a worker): the domains,
    /// the probe, every session breakpoint; then lets it run. One that cannot be set up is let
    /// go undebugged.
    pub(super) fn adopt(&mut self, at: Origin, pid: u32, worker: Option<String>) {
        self.targets.insert(at.clone(), Target::new(pid, worker, self.runtime.urls()));
        let mut placed = self.prepare_target(&at, false);
        for (id, spec) in self.specs.clone() {
            placed = placed.and_then(|()| self.place(&at, &id, &spec));
        }
        if let Err(failure) = placed {
            log::warn(format_args!("{at:?} (pid {pid}) not followed: {failure:?}"));
            self.targets.remove(&at);
        }
        drop(self.send(&at, "Runtime.runIfWaitingForDebugger", json!({})));
    }

    /// A process reported its inspector: connect, set it up, let it run.
    pub(super) fn follow_process(&mut self, report: Report) {
        let Some(events) = &self.events_tx else { return };
        if self.conns.iter().any(|c| c.pid == report.pid) {
            return;
        }
        let connection = self.conns.len();
        let client = match Client::connect_shared(&report.url, REQUEST_TIMEOUT, connection, events)
        {
            Ok(client) => client,
            Err(message) => {
                log::warn(format_args!("cannot follow pid {}: {message}", report.pid));
                return;
            }
        };
        self.conns.push(Conn {
            client,
            pid: report.pid,
            parent: Some(report.parent),
            command: report.command,
            open: true,
        });
        self.adopt(Origin { connection, session: None }, report.pid, None);
    }

    /// A followed process ended: disconnecting lets it exit; its threads are forgotten.
    pub(super) fn disconnect(&mut self, connection: usize) {
        let conn = &mut self.conns[connection];
        conn.open = false;
        conn.client.close();
        self.targets.retain(|origin, _| origin.connection != connection);
        self.turns.forget(|at| at.connection == connection);
    }
}
