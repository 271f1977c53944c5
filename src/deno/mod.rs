//! Deno as a CDP runtime: `deno run …`, `deno test …` and `deno file.ts` started under Deno's
//! inspector, and connected to.
//!
//! Facts this relies on (Deno 2.9, from npm's `deno` package): `--inspect-wait=HOST:0` and
//! `--inspect-brk=HOST:0` take a free port and print `Debugger listening on ws://…` on stderr,
//! as Node does; the module graph (TypeScript compiled, each module with an inline `data:` map
//! in `scriptParsed`) is loaded before Deno waits, so a breakpoint in a `.ts` file is placed
//! through its map as soon as the debugger is enabled. There is no `NodeRuntime` domain: the
//! program's end is the default context's `Runtime.executionContextDestroyed`, after which
//! Deno waits for the debugger to disconnect. A taken port ends Deno at once ("Failed to start
//! inspector server"), without running the program. Permission flags are the user's and are
//! left as they are.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;
use serde_json::Value;

use crate::cdp::runtime::{ended_while_starting, Follow, Runtime, Started, UrlForm};
use crate::cdp::Event;
use crate::debugger::{Code, Failure};
use crate::node::{self, Discovery};
use crate::process::{self, Debuggee, SpawnError};
use crate::shell::CommandLine;

/// The longest a request to the inspector may take while connecting.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// Deno's options that take their value as the next word (`--config deno.json`).
const OPTIONS_WITH_VALUE: &[&str] = &[
    "-c",
    "--config",
    "--import-map",
    "--cert",
    "--location",
    "--seed",
    "--filter",
    "--reporter",
    "--junit-path",
    "--ext",
    "--env-file",
    "--frozen",
];

/// Whether `program` is Deno (`deno`, `/x/node_modules/.bin/deno`).
pub(crate) fn is_deno(program: &str) -> bool {
    let name = std::path::Path::new(program).file_name().and_then(|n| n.to_str());
    matches!(name, Some("deno" | "deno.exe"))
}

/// Whether a stderr line is Deno's inspector's own, not the program's.
fn is_inspector_line(line: &str) -> bool {
    const PREFIXES: &[&str] = &[
        "Debugger listening on ws://",
        "Visit chrome://inspect to connect to the debugger.",
        "Deno is waiting for debugger to connect.",
        "Debugger session started.",
        "Waiting for the debugger to disconnect...",
        "Debugger session ended",
    ];
    PREFIXES.iter().any(|p| line.starts_with(p))
}

/// Where the inspector's address is published: given `stderr`, only there (we read it), not at
/// `/json/list` too, where any local user could read it and connect (the inspector asks
/// nothing of whoever connects, and runs what they send as this user).
const PUBLISH_FLAG: &str = "--inspect-publish-uid";

/// What to spawn: the command with our inspector flag after its subcommand (any of its own
/// replaced: a fixed port may be taken, and `--inspect` alone would run before we attach), and
/// its script (for stopOnEntry).
fn prepare(command: &CommandLine, flag: &str) -> Result<(process::Spec, Option<PathBuf>), String> {
    let mut words = command.words.iter();
    let program = words.next().expect("shell::split never returns an empty command").clone();
    let mut args: Vec<String> = words.cloned().collect();
    // `deno file.ts` is `deno run file.ts`.
    let subcommand = match args.first().map(String::as_str) {
        Some("run" | "test") => 1,
        Some(first) if !first.starts_with('-') && first.contains('.') => {
            args.insert(0, "run".into());
            1
        }
        Some(other) => {
            return Err(format!(
                "`deno {other}` is not debugged: debug `deno run file.ts` or `deno test`"
            ))
        }
        None => return Err("`deno` needs `run FILE` or `test`".into()),
    };
    let mut entry = None;
    let mut index = subcommand;
    while index < args.len() {
        let arg = &args[index];
        let flag_name = arg.split_once('=').map_or(arg.as_str(), |(f, _)| f);
        if matches!(flag_name, "--inspect" | "--inspect-brk" | "--inspect-wait") {
            // Checked all the same: a command that asks for the network is refused, not fixed.
            node::check_address(arg.split_once('=').map_or("", |(_, v)| v))?;
            args.remove(index);
            continue;
        }
        if flag_name == PUBLISH_FLAG {
            // Ours says where the inspector's address goes: stderr alone.
            if !arg.contains('=') && index + 1 < args.len() {
                args.remove(index + 1);
            }
            args.remove(index);
            continue;
        }
        if arg == "--" {
            entry = args.get(index + 1).cloned();
            break;
        }
        if !arg.starts_with('-') {
            entry = Some(arg.clone());
            break;
        }
        if OPTIONS_WITH_VALUE.contains(&arg.as_str()) {
            index += 1;
        }
        index += 1;
    }
    args.insert(subcommand, flag.to_string());
    args.insert(subcommand + 1, format!("{PUBLISH_FLAG}=stderr"));
    let entry = entry.filter(|e| !e.contains("://")).map(|e| match &command.cwd {
        Some(cwd) => cwd.join(e),
        None => PathBuf::from(e),
    });
    let spec = process::Spec {
        program,
        args,
        env: command.env.clone(),
        env_remove: Vec::new(),
        cwd: command.cwd.clone(),
        stdin: command.stdin.clone(),
    };
    Ok((spec, entry))
}

/// Deno, as a CDP runtime.
#[derive(Clone, Default)]
pub(crate) struct Deno {
    /// Where an attached program's files are here (`pathMappings`, given or guessed).
    pub(crate) files: crate::cdp::urls::Files,
}

impl Runtime for Deno {
    fn boxed(&self) -> Box<dyn Runtime> {
        Box::new(self.clone())
    }

    fn language(&self) -> &'static str {
        "deno"
    }

    fn urls(&self) -> UrlForm {
        self.files.form()
    }

    fn map_paths(&mut self, mapping: crate::debugger::model::PathMapping) {
        self.files.map(mapping);
    }

    fn is_end(&mut self, event: &Event) -> bool {
        event.method == "Runtime.executionContextDestroyed"
    }

    fn end_needs_runtime_domain(&self) -> bool {
        true
    }

    /// Deno loads (and type-checks) the program's modules, sending their `scriptParsed`, before
    /// it waits for the debugger: a `runIfWaitingForDebugger` that arrives meanwhile is lost
    /// (seen with `deno test`), and only its start pause shows it took one.
    fn shows_running(&self, event: &Event) -> bool {
        matches!(
            event.method.as_str(),
            "Debugger.paused" | "Debugger.resumed" | "Runtime.executionContextDestroyed"
        )
    }

    fn start_pause_reason(&self) -> &'static str {
        "debugCommand"
    }

    fn start(
        &self,
        command: &CommandLine,
        _stop_at_entry: bool,
        follow: Option<Follow>,
        timeout: Duration,
        deadline: Instant,
        cancel: &Receiver<()>,
    ) -> Result<Started, Failure> {
        // Always the initial pause, even when the caller does not stop there: only then has
        // Deno parsed every module of the program, so breakpoints in TypeScript files are
        // placed through their maps before any of it runs.
        let flag = "--inspect-brk=127.0.0.1:0";
        let (spec, entry) =
            prepare(command, flag).map_err(|m| Failure::new(Code::InvalidCommand, m))?;
        let mut debuggee = Debuggee::spawn(&spec, is_inspector_line).map_err(|e| match e {
            SpawnError::NotFound(_) => Failure::new(
                Code::CommandNotFound,
                format!("{e}: install Deno (`npm install deno` puts it in node_modules/.bin)"),
            ),
            SpawnError::Other(..) => Failure::new(Code::SpawnFailed, e.to_string()),
        })?;
        let url = match node::discover(&mut debuggee, deadline, cancel) {
            Ok(url) => url,
            Err(discovery) => return Err(failure(discovery, timeout, &mut debuggee)),
        };
        let left = deadline.saturating_duration_since(Instant::now()).min(REQUEST_TIMEOUT);
        let client = match Follow::connect(follow.as_ref(), &url, left) {
            Ok(client) => client,
            Err(m) => {
                let failure = Failure::new(Code::InspectorFailed, m);
                return Err(ended_while_starting(&mut debuggee, failure));
            }
        };
        Ok(Started { debuggee, client: Some(client), entry, program: spec.program })
    }

    fn setup_requests(
        &self,
        _own: bool,
        _follow: bool,
        _probe: &str,
    ) -> Vec<(&'static str, Value)> {
        Vec::new()
    }
}

/// Why Deno did not open its inspector, in words that say what to do.
fn failure(discovery: Discovery, timeout: Duration, debuggee: &mut Debuggee) -> Failure {
    let output = debuggee.output().to_json();
    let stderr = debuggee.output().stderr_text();
    match discovery {
        Discovery::Cancelled => Failure::Cancelled,
        Discovery::Exited(_) if stderr.contains("Failed to start inspector server") => {
            Failure::new(
                Code::PortInUse,
                "Deno could not open its inspector (the address is taken): drop the --inspect \
                 flag from the command and debug-mcp picks a free port",
            )
            .with("output", output)
        }
        Discovery::Exited(_) if stderr.contains(PUBLISH_FLAG) => Failure::new(
            Code::InvalidCommand,
            format!(
                "this Deno has no {PUBLISH_FLAG}, which keeps its inspector's address from other \
                 local users: a newer Deno is needed (`npm install deno`)"
            ),
        )
        .with("output", output),
        Discovery::Exited(exit) => Failure::new(
            Code::Exited,
            format!(
                "Deno exited ({}) before it opened its inspector: see its stderr",
                exit.describe()
            ),
        )
        .with("exitCode", exit.code.map_or(Value::Null, Value::from))
        .with("output", output),
        Discovery::PortInUse(_) | Discovery::Failed(_) => {
            Failure::new(Code::InspectorFailed, "Deno could not open its inspector: see its stderr")
                .with("output", output)
        }
        Discovery::TimedOut => crate::debugger::script::timeout_failure(timeout)
            .with(
                "hint",
                "Deno never opened its inspector (no `Debugger listening on ws://` line on its \
                 stderr)"
                    .into(),
            )
            .with("output", output),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shell;

    fn check(line: &str, expected: &str) {
        let got = match prepare(&shell::split(line).unwrap(), "--inspect-wait=127.0.0.1:0") {
            Ok((spec, entry)) => format!(
                "{} {:?}{}",
                spec.program,
                spec.args,
                entry.map(|e| format!(" entry={}", e.display())).unwrap_or_default()
            ),
            Err(e) => format!("error: {e}"),
        };
        assert_eq!(got, expected, "line: {line}");
    }

    #[test]
    fn prepares_commands() {
        check(
            "deno run --allow-read main.ts x",
            r#"deno ["run", "--inspect-wait=127.0.0.1:0", "--inspect-publish-uid=stderr", "--allow-read", "main.ts", "x"] entry=main.ts"#,
        );
        check(
            "deno main.ts",
            r#"deno ["run", "--inspect-wait=127.0.0.1:0", "--inspect-publish-uid=stderr", "main.ts"] entry=main.ts"#,
        );
        check(
            "./node_modules/.bin/deno test -c deno.json --inspect-brk=9229 t_test.ts",
            r#"./node_modules/.bin/deno ["test", "--inspect-wait=127.0.0.1:0", "--inspect-publish-uid=stderr", "-c", "deno.json", "t_test.ts"] entry=t_test.ts"#,
        );
        check(
            "deno test",
            r#"deno ["test", "--inspect-wait=127.0.0.1:0", "--inspect-publish-uid=stderr"]"#,
        );
        check(
            "deno run --inspect-publish-uid http --inspect-publish-uid=http,stderr a.ts",
            r#"deno ["run", "--inspect-wait=127.0.0.1:0", "--inspect-publish-uid=stderr", "a.ts"] entry=a.ts"#,
        );
        check(
            "deno run --inspect=0.0.0.0:9229 a.ts",
            "error: inspector host `0.0.0.0` is not a loopback address: an inspector open to the network lets anyone who connects run code as this user. Use 127.0.0.1, or drop the flag and let debug-mcp pick a free local port",
        );
        check(
            "deno task dev",
            "error: `deno task` is not debugged: debug `deno run file.ts` or `deno test`",
        );
    }
}
