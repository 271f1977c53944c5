//! What a runtime adds over CDP: the seam between the CDP code every JavaScript runtime shares
//! (the session backend in `session.rs`, the `debug-script` collector in `script.rs`,
//! breakpoints, source maps) and one runtime. Node (`node/`) is the first implementation; Deno
//! and browser pages are to follow, each as one file.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};
use serde_json::Value;

use crate::cdp::follow::Channel;
use crate::cdp::{Client, Event, Relay};
use crate::debugger::Failure;
use crate::process::Debuggee;
use crate::shell::CommandLine;

/// How a runtime's script URLs name files.
#[derive(Clone, Copy)]
pub(crate) struct UrlForm {
    /// The file a script URL names (`file:///a%20b.js` is `/a b.js`).
    pub(crate) to_path: fn(&str) -> String,
    /// A `urlRegex` for `Debugger.setBreakpointByUrl` that matches every URL the files load
    /// under.
    pub(crate) regex: fn(&[&Path]) -> String,
}

/// A program started under a runtime's inspector and connected to.
pub(crate) struct Started {
    pub(crate) debuggee: Debuggee,
    /// The connection to the started process's inspector; `None` when the process opens none
    /// of its own and every process of the program comes through the [`Follow`] channel (a
    /// launcher like `npm test`, Node's test runner).
    pub(crate) client: Option<Client>,
    /// The command's script, where source maps are looked for.
    pub(crate) entry: Option<PathBuf>,
    /// The program as it was started (for logs).
    pub(crate) program: String,
}

/// Following every process of the program: the channel they report on, and the event channel
/// every connection shares (the started process's connection is number 0).
pub(crate) struct Follow<'a> {
    /// Where processes report, when the runtime has a bootloader.
    pub(crate) channel: Option<&'a Channel>,
    pub(crate) events: &'a Sender<Event>,
    pub(crate) received: &'a Receiver<Event>,
}

/// What a run that follows the program's processes opens before it starts it: the event
/// channel every connection shares, and (when the runtime has a bootloader) the channel its
/// processes report on.
pub(crate) struct Following {
    pub(crate) channel: Option<Channel>,
    pub(crate) events_tx: Sender<Event>,
    pub(crate) events: Receiver<Event>,
}

impl Following {
    pub(crate) fn open<R: Runtime>() -> Result<Following, Failure> {
        let (events_tx, events) = crossbeam_channel::unbounded();
        let channel = match R::BOOT {
            Some((name, boot)) => Some(
                Channel::open(name, boot, events_tx.clone())
                    .map_err(|message| Failure::new(crate::debugger::Code::Internal, message))?,
            ),
            None => None,
        };
        Ok(Following { channel, events_tx, events })
    }

    /// For [`Runtime::start`]: the started process's connection joins the shared channel
    /// (with or without a bootloader).
    pub(crate) fn follow(&self) -> Option<Follow<'_>> {
        let (events, received) = (&self.events_tx, &self.events);
        Some(Follow { channel: self.channel.as_ref(), events, received })
    }
}

/// A target inside another (a Node worker thread) that started and waits for the debugger.
pub(crate) struct Inner {
    pub(crate) session: String,
    /// Its name in answers (`[worker 1]`).
    pub(crate) name: String,
}

/// One JavaScript runtime spoken to over CDP.
pub(crate) trait Runtime: Send + 'static {
    /// `language` in answers.
    const LANGUAGE: &'static str;
    /// The event that says the program waits for the debugger to let it run.
    const READY_EVENT: &'static str;
    /// The event that says the program finished and waits for the debugger to let go.
    const END_EVENT: &'static str;
    const URLS: UrlForm;

    /// The bootloader every process of a followed program loads first (its file name and text),
    /// when the runtime can follow child processes.
    const BOOT: Option<(&'static str, &'static str)>;
    /// How requests reach inner targets (worker threads), when the runtime has them.
    const RELAY: Option<Relay>;

    /// Starts `command` under the inspector (stopped before its first line when
    /// `stop_at_entry`) and connects to it, within `deadline`; `timeout` is the caller's, for
    /// the words of a failure. With `follow`, every process of the program loads the
    /// bootloader and reports on its channel.
    fn start(
        command: &CommandLine,
        stop_at_entry: bool,
        follow: Option<Follow>,
        timeout: Duration,
        deadline: Instant,
        cancel: &Receiver<()>,
    ) -> Result<Started, Failure>;
    /// The runtime's own requests when a debugger starts (its domains, settings); `own` when
    /// the program is one debug-mcp started; `follow` when inner targets (workers) are to wait
    /// for the debugger and be debugged too.
    fn setup_requests(own: bool, follow: bool) -> Vec<(&'static str, Value)>;
    /// The event that says an inner target started and waits for the debugger.
    fn inner_started(event: &Event) -> Option<Inner>;
    /// The event that says an inner target ended: its session.
    fn inner_ended(event: &Event) -> Option<&str>;
    /// An event of the runtime's own domains, before the shared code looks at it, when inner
    /// targets are not followed; true when it says the program started a worker that runs
    /// undebugged.
    fn on_event(client: &mut Client, event: &Event) -> bool;
}
