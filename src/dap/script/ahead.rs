//! The next program's adapter started while one runs (`cargo test`'s test programs, `go test
//! ./...`'s packages), on a thread of its own: lldb-dap takes 0.3 s to answer `initialize` and
//! as long to `launch` a test program, Delve 0.1 s to launch one. `initialize` and `launch` are
//! sent at once (the adapter reads them in turn; the program waits for `configurationDone`),
//! their answers read when the program's turn comes. The thread lives until that program's run
//! ends: an adapter's parent-death signal (`sys.rs`) comes when the thread that started it
//! ends, not the process.

use std::thread::JoinHandle;

use crossbeam_channel::{bounded, Receiver, Sender};

use crate::dap::flavour::{Flavour, Launched};
use crate::dap::{self, Reply};
use crate::debugger::{Code, Failure};
use crate::shell::CommandLine;

/// The `initialize` and `launch` requests sent ahead: their answers to come.
pub(super) type Sent = (Receiver<Reply>, Receiver<Reply>);

pub(super) struct Ahead {
    started: Receiver<Result<(Launched, Sent), Failure>>,
    /// Dropped once the run is over: the thread then ends.
    hold: Option<Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Ahead {
    pub(super) fn start<F: Flavour>(command: &CommandLine, flavour: &F) -> Ahead {
        let (command, flavour) = (command.clone(), flavour.clone());
        let (report, started) = bounded(1);
        let (hold, held) = bounded::<()>(0);
        let thread = std::thread::spawn(move || {
            let started = flavour.start(&command, false).map(|mut launched| {
                let arguments = dap::initialize_arguments(flavour.adapter());
                let initialize = launched.client.send("initialize", arguments);
                let launch = launched.client.send(launched.request, launched.arguments.clone());
                (launched, (initialize, launch))
            });
            drop(report.send(started));
            let _ = held.recv();
        });
        Ahead { started, hold: Some(hold), thread: Some(thread) }
    }

    /// The adapter started, with the requests sent (once).
    pub(super) fn launched(&self) -> Result<(Launched, Sent), Failure> {
        let gone = || Failure::new(Code::Internal, "the thread starting the adapter ended");
        self.started.recv().map_err(|_| gone())?
    }
}

impl Drop for Ahead {
    fn drop(&mut self) {
        // An adapter started but never taken ends with the thread (its `Debuggee` dropped).
        drop(self.hold.take());
        if let Some(thread) = self.thread.take() {
            drop(thread.join());
        }
    }
}
