//! What an adapter adds over DAP: the seam between the DAP code every adapter shares (the
//! session backend in `session.rs`, the `debug-script` collector in `script.rs`) and one
//! adapter's ways. debugpy (`python/`) is the first implementation.
//!
//! Values are typed through a probe the adapter's runtime evaluates (`probe`): an expression
//! whose string value carries `{type, value}` as JSON, so that answers have the same shape as
//! Node's.

use serde_json::Value;

use crate::dap::Client;
use crate::debugger::Failure;
use crate::process::Debuggee;
use crate::shell::CommandLine;

/// An adapter started for a command, before `initialize`.
pub(crate) struct Launched {
    pub(crate) client: Client,
    /// The adapter's process: ours, killed at the end.
    pub(crate) adapter: Debuggee,
    /// The `launch` request's arguments.
    pub(crate) arguments: Value,
    /// Whether the program gets the probe when it starts (else at its first stop).
    pub(crate) prepared: bool,
    /// What runs the adapter, for the words of a failure.
    pub(crate) label: String,
    /// `launch`, or `attach` for an adapter that starts the program itself and is then
    /// attached to (rdbg).
    pub(crate) request: &'static str,
    /// The program's output, when it is the adapter's own (delve and rdbg run the program
    /// with their own stdout and stderr) rather than `output` events.
    pub(crate) output: Option<crate::process::Output>,
    /// Child processes that connect by themselves (our own Python debugger in each).
    pub(crate) arrivals: Option<Arrivals>,
}

/// Child processes that reach the session by themselves rather than being offered (each of
/// a program's Python processes connects to our debugger's socket): each one's client, its
/// events tagged with its connection (1, 2, …) on `events`, followed by an `arrived` event
/// there that says it is in `clients`.
pub(crate) struct Arrivals {
    pub(crate) clients: crossbeam_channel::Receiver<Client>,
    pub(crate) events: crossbeam_channel::Receiver<serde_json::Value>,
    pub(crate) events_tx: crossbeam_channel::Sender<serde_json::Value>,
    /// What accepts them, until the session ends.
    pub(crate) keep: Box<dyn Send>,
}

/// A child process the adapter offers to debug: where to connect for its session, and the
/// `attach` arguments that name it.
pub(crate) struct Offered {
    pub(crate) address: std::net::SocketAddr,
    pub(crate) arguments: Value,
}

pub(crate) trait Flavour: Clone + Send + Sync + 'static {
    /// `language` in answers.
    fn language(&self) -> &str;
    /// `adapterID` in `initialize`, and the adapter's name in messages.
    fn adapter(&self) -> &str;

    /// Starts the adapter for `command`; the program stops at its first line when
    /// `stop_on_entry`.
    fn start(&self, command: &CommandLine, stop_on_entry: bool) -> Result<Launched, Failure>;
    /// Why our adapter ended early, in its own words; `label` is [`Launched::label`].
    /// Asks, in the `launch` arguments, for the program's child processes to be offered
    /// ([`Flavour::offered`]); false when the adapter cannot.
    fn follow_children(&self, arguments: &mut Value) -> bool;
    /// An event that offers a child process to debug (debugpy: `debugpyAttach`).
    fn offered(&self, event: &Value) -> Option<Offered>;
    /// A child process's command line as the program ran it, without what the adapter wrapped
    /// it in.
    fn command_shown(&self, command: &str) -> String;
    fn adapter_failed(&self, adapter: &mut Debuggee, client: &Client, label: &str) -> Failure;
    /// The `attach` request's arguments, for a program that listens for its debugger.
    fn attach_arguments(&self) -> Value;
    /// Adds to `attach` arguments where the program's files are here (`mappings`), so that
    /// the adapter translates breakpoints and frames both ways; false when it cannot.
    fn map_paths(
        &self,
        _arguments: &mut Value,
        _mappings: &[crate::debugger::model::PathMapping],
    ) -> bool {
        false
    }

    /// Whether the program runs elsewhere (a gdb-remote server's): a path that is not here is
    /// shown marked remote. Any program attached to by its port is taken as such too.
    fn runs_elsewhere(&self) -> bool {
        false
    }
    /// The `evaluate` arguments that list the program's source files before it runs (Delve's
    /// `dlv sources`; lldb's line tables of the files `named`, the breakpoints' file names), to
    /// guess where they are here when no `pathMappings` were given.
    fn sources_request(&self, _named: &[&str]) -> Option<Value> {
        None
    }
    /// The files in [`Flavour::sources_request`]'s answer.
    fn sources(&self, _answer: &Value) -> Vec<String> {
        Vec::new()
    }
    /// The `evaluate` arguments that make the adapter map paths by `mapping` once attached.
    fn map_paths_request(&self, _mapping: &crate::debugger::model::PathMapping) -> Option<Value> {
        None
    }

    /// `setExceptionBreakpoints` filters for `none`, `uncaught` or `all`.
    fn exception_filters(&self, state: &str) -> Value;
    /// For a launch whose `pauseOnExceptions` is `all` and passes over libraries: makes the
    /// adapter itself leave out the exceptions raised in libraries (stopping at each one only
    /// to go on costs a round trip each, thousands in a test run), keeping the files in
    /// `keep` (they hold breakpoints) debuggable. Adapters that cannot are left as they are:
    /// the session passes over such stops itself. True when the adapter leaves them out.
    fn pass_over_libraries(&self, _launch: &mut Value, _keep: &[std::path::PathBuf]) -> bool {
        false
    }
    /// Whether an exception of this class is how a program ends (Python's `SystemExit`,
    /// whatever its code): never a stop for `pauseOnExceptions`.
    fn is_exit(&self, _class: &str) -> bool {
        false
    }
    /// Where the adapter placed a breakpoint (`None`: not said yet), or why it never stops.
    fn placed_line(&self, breakpoint: &Value) -> Result<Option<u64>, String>;
    /// Whether an `output` event is a logpoint's message rather than the program's output.
    fn is_logpoint_output(&self, body: &Value) -> bool;
    /// Whether `text` is the message of the logpoint `template` (for adapters that do not say
    /// which logpoint wrote it).
    fn logpoint_fits(&self, template: &str, text: &str) -> bool;
    /// The `logMessage` to send for logpoint `id`'s `template`: each `{expression}` evaluated
    /// on its own, and a mark that says whose the message is. `importable` as for `probe`.
    fn logpoint_message(&self, id: &str, template: &str, importable: bool) -> String;
    /// The logpoint id a message is marked with, and the message without the mark.
    fn logpoint_owner<'t>(&self, text: &'t str) -> Option<(&'t str, &'t str)>;

    /// The adapter's scope names a `scope` argument means, or why it has none such.
    fn scope_names(&self, scope: &str) -> Result<&'static [&'static str], String>;
    /// The `scope` the variables of the adapter's scope `name` are listed under.
    fn scope_kind(&self, name: &str) -> &'static str;
    /// For an entry the adapter lists among variables that groups others rather than being
    /// one of the program's names: whether its members are listed in its place (`in_scope`:
    /// listing a frame's scope, not an object's members). `None` for a name of the program.
    fn group(&self, name: &str, in_scope: bool) -> Option<bool>;
    /// A local's name as the program spells it: lldb adds ` @ file:line` to a name that two
    /// variables in scope have (an async fn's argument, and its copy in the future's state).
    fn local_name<'n>(&self, name: &'n str) -> &'n str {
        name
    }
    /// A variable's value text, typed as JSON (numbers, booleans, null, strings).
    fn value(&self, kind: &str, text: &str) -> Value;
    /// Whether a structured value's text only sums it up (`size=2`, an address), so that its
    /// members say what it holds (see `dap::typed`).
    fn summary_only(&self, _kind: &str, _text: &str) -> bool {
        false
    }
    /// How a value's text hides the value, when it does (an address, a size, an opaque
    /// structure): previews then read it one level down (`dap::values::preview`).
    fn opaque(&self, _kind: &str, _text: &str) -> Option<Opaque> {
        None
    }
    /// A frame of the adapter's own start-up, at the bottom of every stack.
    fn is_startup_frame(&self, frame: &Value) -> bool;
    /// Whether a file is the runtime's own or an installed library's, not the program's.
    fn is_library(&self, path: &str) -> bool;

    /// An expression whose string value carries `expression`'s typed value, cut at
    /// `max_chars` (`None`: the probe's own limit); `importable` when the probe can be
    /// imported (else the expression installs it).
    /// `None` for an adapter without one: values are then the adapter's own `evaluate`
    /// answers, typed by [`Flavour::value`] (see `dap::typed`).
    fn probe(&self, expression: &str, importable: bool, max_chars: Option<usize>)
        -> Option<String>;
    /// The JSON text of the typed value in a probe's answer, and whether the value was cut.
    fn probe_result<'t>(&self, text: &'t str) -> Option<(bool, &'t str)>;
    /// An expression that puts the probe into a program that did not get it at start.
    fn install_probe(&self) -> &'static str;
    /// For `setVariable`: an expression that evaluates `value` once and keeps it, and the
    /// expression that hands the kept value over.
    /// `None`: the adapter's `setVariable` says itself when `value` fails.
    fn hold(&self, value: &str) -> Option<(String, &'static str)>;
    /// An expression listing the program's loaded source files; `None`: ask the adapter
    /// (`loadedSources`).
    fn loaded_files(&self) -> Option<&'static str>;
    /// The path a breakpoint's file is sent as: by default with every symlink resolved (what
    /// Python imports); `named` is the path as the agent gave it.
    fn breakpoint_path<'p>(
        &self,
        named: &'p std::path::Path,
        real: &'p std::path::Path,
    ) -> &'p std::path::Path {
        let _ = named;
        real
    }
    /// The request that steps a thread (stopped at `frame`) one instruction on, over calls.
    fn instruction_step(&self, thread: &Value, frame: &Value) -> (&'static str, Value) {
        let _ = frame;
        ("next", serde_json::json!({"threadId": thread, "granularity": "instruction"}))
    }
    /// Whether a `stackTrace` answer's `totalFrames` is the stack's depth (Delve's says only
    /// that there are more).
    fn counts_frames(&self) -> bool {
        true
    }
    /// After a step out of a function, the value it returned, as a variable (`{value, type,
    /// variablesReference}`), where the adapter reports one: a `Return` scope (gdb's).
    fn returned(
        &self,
        frame: &Value,
        ask: &mut dyn FnMut(&str, Value) -> Option<Value>,
    ) -> Option<Value> {
        returned_scope(frame, ask)
    }
    /// A frame's function name as the program's source spells it (Rust's legacy symbols
    /// demangled, their hash suffixes left out).
    fn function_name<'n>(&self, name: &'n str) -> std::borrow::Cow<'n, str> {
        name.into()
    }
    /// What to say of an expression the adapter could not evaluate (`message`, its reason),
    /// when it does not say what works instead.
    fn evaluation_failed(&self, message: &str) -> String {
        message.to_string()
    }
    /// The program's exit code, when an `output` event says it (Delve sends no `exited`).
    fn exit_said(&self, _body: &Value) -> Option<i32> {
        None
    }
    /// What the adapter does first that takes a while, for progress (Delve: "building").
    fn preparing(&self) -> Option<String> {
        None
    }
    /// Whether an `output` event's text is the adapter's own message that it sends as the
    /// program's `stdout` (gdb: "Breakpoint 2 at 0x…: file …, line 15.").
    fn is_adapter_message(&self, _text: &str) -> bool {
        false
    }
    /// Whether the adapter's process is the program's (rdbg runs the script in itself): its
    /// exit is then the program's.
    fn adapter_is_program(&self) -> bool {
        false
    }
    /// Whether such an adapter stops the program as it loads it (rdbg does): that first
    /// `pause` stop is passed over.
    fn pauses_as_it_loads(&self) -> bool {
        self.adapter_is_program()
    }
    /// The program's output as it wrote it (a pty's `\r\n` back to `\n`).
    fn program_text<'t>(&self, text: &'t str) -> std::borrow::Cow<'t, str> {
        std::borrow::Cow::Borrowed(text)
    }
    /// Whether a loaded file is debug-mcp's own helper.
    fn is_helper(&self, file: &str) -> bool;
    /// With `failures`: functions to stop at, where a failure begins (Go's
    /// `testing.(*common).Fail`, Rust's `rust_panic`); see `dap::failures`.
    fn failure_functions(&self) -> &'static [&'static str] {
        &[]
    }
}

/// How an adapter's text of a value hides what it holds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Opaque {
    /// An address (a reference, a `Box`, a C pointer): the value is its one child.
    Pointer,
    /// A structure summed up by its type and address (`Version @ 0x7ff…`): its members.
    Members,
    /// A sequence or map summed up by its size (`size=3`): its first items.
    Items,
    /// A shared pointer summed up by its counts (`strong=1, weak=0`): the value it holds.
    Shared,
}

/// The first variable of a frame's `Return` scope, where the adapter lists one (gdb, after a
/// step out).
pub(crate) fn returned_scope(
    frame: &Value,
    ask: &mut dyn FnMut(&str, Value) -> Option<Value>,
) -> Option<Value> {
    let scopes = ask("scopes", serde_json::json!({"frameId": frame}))?;
    let scopes = scopes["scopes"].as_array()?;
    let scope =
        scopes.iter().find(|s| s["name"].as_str().is_some_and(|n| n.starts_with("Return")))?;
    let reference = &scope["variablesReference"];
    let listed = ask("variables", serde_json::json!({"variablesReference": reference}))?;
    listed["variables"].as_array()?.first().cloned()
}
