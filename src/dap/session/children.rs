//! A session's child processes: offered by the adapter (debugpy's `debugpyAttach`) or arrived
//! by themselves (our own Python debugger in each of the program's processes), each a DAP
//! session of its own whose events carry its connection; and which session an event is
//! about: a stop in another one than the one shown is held.

use serde_json::Value;

use super::{Dap, Paused, REQUEST_TIMEOUT};
use crate::dap::flavour::{Flavour, Offered};
use crate::dap::Child;
use crate::debugger::backend::Happening;
use crate::log;

impl<F: Flavour> Dap<F> {
    /// The adapter offers a child process: open its session (`initialize`, `attach`); its
    /// breakpoints follow its `initialized` event. One that cannot be reached runs undebugged.
    pub(super) fn follow(&mut self, offered: Offered) {
        let Some(events) = &self.more_tx else { return };
        let connection = self.children.len() + 1;
        self.children.extend(Child::follow(
            &self.flavour,
            offered,
            connection,
            events,
            REQUEST_TIMEOUT,
        ));
    }

    /// A child process connected (our own Python debugger in it): its session is opened as
    /// an offered child's is.
    pub(super) fn arrived(&mut self, connection: usize) {
        let Some((arrivals, attach)) = &self.arrivals else { return };
        let Ok(client) = arrivals.clients.try_recv() else { return };
        if connection != self.children.len() + 1 {
            log::warn(format_args!("child connection {connection} arrived out of order"));
            return;
        }
        self.children.push(Child::open(&self.flavour, client, attach.clone()));
    }

    /// An event of a child's session.
    pub(super) fn child_event(
        &mut self,
        connection: usize,
        event: Value,
    ) -> Option<Happening<Paused>> {
        if event["event"] == "arrived" {
            self.arrived(connection);
            return None;
        }
        let lists = self.breakpoint_lists();
        let filters = self.flavour.exception_filters(&self.pause_on_exceptions);
        let child = self.children.get_mut(connection - 1)?;
        if event["type"] == "request" {
            child.client.refuse(&event);
            return None;
        }
        let body = &event["body"];
        match event["event"].as_str().unwrap_or_default() {
            "initialized" => child.configure(lists, filters),
            "process" => child.said_process(&self.flavour, body),
            // A child's stdout and stderr reach the program's output through its parent (or
            // the parent reads them); its session repeats them: only logpoints count here.
            "output" => {
                let text = body["output"].as_str().unwrap_or_default().trim_end_matches('\n');
                let (id, text) = self.flavour.logpoint_owner(text)?;
                let breakpoint = Some(id.to_string());
                return Some(Happening::Logpoint { breakpoint, text: text.into() });
            }
            "stopped" => return self.stopped(connection, body.clone()),
            "continued" if self.turns.shown() == Some(&connection) => {
                self.turns.resumed(&connection);
                return Some(Happening::Resumed);
            }
            "terminated" => {
                child.ended();
                self.turns.forget(|c| *c == connection);
            }
            _ => {}
        }
        None
    }

    /// A thread's id for `debug-threads`: the adapter's for the program's, `pid/id` for a
    /// child's.
    pub(super) fn thread_id(&self, connection: usize, thread: &Value) -> String {
        match connection.checked_sub(1).and_then(|c| self.children.get(c)).and_then(|c| c.pid) {
            Some(pid) => format!("{pid}/{thread}"),
            None => thread.to_string(),
        }
    }

    /// An event, as the actor should see it: a stop in another session than the one shown is
    /// held (it stays stopped) until the shown one goes on.
    pub(super) fn take(&mut self, event: Value) -> Option<Happening<Paused>> {
        let happening = match event["connection"].as_u64() {
            Some(connection) => self.child_event(connection as usize, event)?,
            None => self.handle_event(event)?,
        };
        self.turns.arrived(happening)
    }
}
