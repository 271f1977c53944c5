//! What a runtime adds over CDP: the seam between the CDP code every JavaScript runtime shares
//! (the session backend in `session.rs`, the `debug-script` collector in `script.rs`,
//! breakpoints, source maps) and one runtime. Node (`node/`) is the first implementation; Deno
//! and browser pages are to follow, each as one file.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;
use serde_json::Value;

use crate::cdp::{Client, Event};
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
    pub(crate) client: Client,
    /// The command's script, where source maps are looked for.
    pub(crate) entry: Option<PathBuf>,
    /// The program as it was started (for logs).
    pub(crate) program: String,
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

    /// Starts `command` under the inspector (stopped before its first line when
    /// `stop_at_entry`) and connects to it, within `deadline`; `timeout` is the caller's, for
    /// the words of a failure.
    fn start(
        command: &CommandLine,
        stop_at_entry: bool,
        timeout: Duration,
        deadline: Instant,
        cancel: &Receiver<()>,
    ) -> Result<Started, Failure>;
    /// The runtime's own requests when a debugger starts (its domains, settings); `own` when
    /// the program is one debug-mcp started.
    fn setup_requests(own: bool) -> Vec<(&'static str, Value)>;
    /// An event of the runtime's own domains, before the shared code looks at it; true when it
    /// says the program started a worker that runs undebugged.
    fn on_event(client: &mut Client, event: &Event) -> bool;
}
