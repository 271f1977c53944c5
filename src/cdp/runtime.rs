//! What a runtime adds over CDP: the seam between the CDP code every JavaScript runtime shares
//! (the session backend in `session.rs`, the `debug-script` collector in `script.rs`,
//! breakpoints, source maps) and one runtime. Node (`node/`) is the first implementation; Deno
//! and browser pages are to follow, each as one file.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};
use serde_json::Value;

use crate::cdp::follow::Channel;
pub(crate) use crate::cdp::urls::UrlForm;
use crate::cdp::{Client, Event, Relay};
use crate::debugger::Failure;
use crate::process::Debuggee;
use crate::shell::CommandLine;

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

impl Follow<'_> {
    /// Connects to the started process's inspector (`url`): as connection 0 of the shared
    /// event channel when the run follows the program, else with a channel of its own.
    pub(crate) fn connect(
        follow: Option<&Follow>,
        url: &str,
        timeout: Duration,
    ) -> Result<Client, String> {
        match follow {
            Some(follow) => Client::connect_shared(url, timeout, 0, follow.events),
            None => Client::connect(url, timeout),
        }
    }
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
    pub(crate) fn open(runtime: &dyn Runtime) -> Result<Following, Failure> {
        let (events_tx, events) = crossbeam_channel::unbounded();
        let channel = match runtime.boot() {
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

/// How long a program that broke off its start is given to exit, to say so with its output.
const EXIT_WAIT: Duration = Duration::from_secs(2);

/// A start that failed because the program ended meanwhile (Deno that cannot load its module
/// opens its inspector first, then exits): said as the program's exit, with its output, rather
/// than as the connection's failure. Otherwise `failure` as it is.
pub(crate) fn ended_while_starting(debuggee: &mut Debuggee, failure: Failure) -> Failure {
    if matches!(failure, Failure::Cancelled) {
        return failure;
    }
    let Ok(exit) = debuggee.exited().recv_timeout(EXIT_WAIT) else { return failure };
    debuggee.record_exit(exit);
    debuggee.settle_output();
    Failure::new(
        crate::debugger::Code::Exited,
        format!(
            "the program exited ({}) before it could be debugged: see its stderr",
            exit.describe()
        ),
    )
    .with("exitCode", exit.code.map_or(Value::Null, Value::from))
    .with("output", debuggee.output().to_json())
}

/// Fails when the answer to one of [`Runtime::go_requests`] says the program could not start
/// (`Page.navigate`'s `errorText`: `net::ERR_CONNECTION_REFUSED`).
pub(crate) fn check_go(answer: &Value) -> Result<(), Failure> {
    match answer["errorText"].as_str().filter(|e| !e.is_empty()) {
        Some(error) => Err(Failure::new(
            crate::debugger::Code::LaunchFailed,
            format!(
                "the page could not be opened: {error} (is its server running, at that address?)"
            ),
        )),
        None => Ok(()),
    }
}

/// Names the program's first pause as Node does (`Break on start`), whatever the runtime
/// calls it, so that the shared code tells it from a pause asked for later. `began`: a pause
/// came already.
pub(crate) fn name_start_pause(runtime: &dyn Runtime, began: &mut bool, params: &mut Value) {
    if !std::mem::replace(began, true) && params["reason"] == runtime.start_pause_reason() {
        params["reason"] = "Break on start".into();
    }
}

/// A target inside another (a Node worker thread) that started and waits for the debugger.
pub(crate) struct Inner {
    pub(crate) session: String,
    /// Its name in answers (`[worker 1]`).
    pub(crate) name: String,
}

/// One JavaScript runtime spoken to over CDP. A value: a page's runtime carries its URL, its
/// browser and its web root. Used as `Box<dyn Runtime>`, so that the CDP code that debugs over
/// it is compiled once, not once per runtime (about 200 KiB of binary each).
pub(crate) trait Runtime: Send + 'static {
    /// A copy, for a session that starts the program again (`debug-restart`).
    fn boxed(&self) -> Box<dyn Runtime>;
    /// `language` in answers.
    fn language(&self) -> &'static str;
    /// How its script URLs name files.
    fn urls(&self) -> UrlForm;
    /// Adds where an attached program's files are here, found once attached (guessed).
    fn map_paths(&mut self, _mapping: crate::debugger::model::PathMapping) {}
    /// The event that says the program waits for the debugger to let it run, when the runtime
    /// has one (Node's `NodeRuntime.waitingForDebugger`).
    fn ready_event(&self) -> Option<&'static str> {
        None
    }
    /// Whether an event of the started process shows that it runs (no more
    /// `runIfWaitingForDebugger` nudges are due). Any event, for Node.
    fn shows_running(&self, _event: &Event) -> bool {
        true
    }
    /// Whether an event says the program finished (and waits for the debugger to let go).
    fn is_end(&mut self, event: &Event) -> bool;
    /// How long the program runs before `debug-script` ends it, when it would not end by itself
    /// (a page's `until` in milliseconds).
    fn runs_for(&self) -> Option<Duration> {
        None
    }
    /// Whether the program exits by itself once the debugger lets it go at its end (a browser
    /// does not: it is closed).
    fn exits_when_let_go(&self) -> bool {
        true
    }
    /// Whether the processes the program starts are the runtime's own machinery (a browser's
    /// renderers and helpers), never to be reported as code run undebugged.
    fn children_are_its_own(&self) -> bool {
        false
    }
    /// Whether console calls and uncaught errors are the program's output (a page has no
    /// stdout; Node's console writes to its own).
    fn console_is_output(&self) -> bool {
        false
    }
    /// The reason of the pause `--inspect-brk` makes before the first statement (Node's
    /// `Break on start`; Deno says `debugCommand`).
    fn start_pause_reason(&self) -> &'static str {
        "Break on start"
    }
    /// Whether [`Runtime::is_end`] needs the `Runtime` domain left enabled during a run
    /// (`debug-script` turns it off otherwise: console calls would all become events).
    fn end_needs_runtime_domain(&self) -> bool {
        false
    }
    /// The bootloader every process of a followed program loads first (its file name and text),
    /// when the runtime can follow child processes.
    fn boot(&self) -> Option<(&'static str, &'static str)> {
        None
    }
    /// How requests reach inner targets (worker threads), when the runtime has them.
    fn relay(&self) -> Option<Relay> {
        None
    }

    /// Starts `command` under the inspector (stopped before its first line when
    /// `stop_at_entry`) and connects to it, within `deadline`; `timeout` is the caller's, for
    /// the words of a failure. With `follow`, every process of the program loads the
    /// bootloader and reports on its channel.
    fn start(
        &self,
        command: &CommandLine,
        stop_at_entry: bool,
        follow: Option<Follow>,
        timeout: Duration,
        deadline: Instant,
        cancel: &Receiver<()>,
    ) -> Result<Started, Failure>;
    /// The runtime's own requests when a debugger starts (its domains, settings); `own` when
    /// the program is one debug-mcp started; `follow` when inner targets (workers) are to wait
    /// for the debugger and be debugged too; `probe`, the expression that installs the probe
    /// (which a page must install again in every document it loads).
    fn setup_requests(&self, own: bool, follow: bool, probe: &str) -> Vec<(&'static str, Value)>;
    /// What lets the program run once it is set up, besides `Runtime.runIfWaitingForDebugger`
    /// (a page navigates to its URL). An answer with `errorText` fails the start.
    fn go_requests(&self) -> Vec<(&'static str, Value)> {
        Vec::new()
    }
    /// How a `debug-script` run ends, in words, for a program that never ends by itself (`the
    /// page's load event`); `None` for a program that does.
    fn end_said(&self) -> Option<String> {
        None
    }
    /// The event that says an inner target started and waits for the debugger.
    fn inner_started(&self, _event: &Event) -> Option<Inner> {
        None
    }
    /// The event that says an inner target ended: its session.
    fn inner_ended<'e>(&self, _event: &'e Event) -> Option<&'e str> {
        None
    }
    /// An event of the runtime's own domains, before the shared code looks at it, when inner
    /// targets are not followed; true when it says the program started a worker that runs
    /// undebugged.
    fn on_event(&self, _client: &mut Client, _event: &Event) -> bool {
        false
    }
}
