//! Python sessions as a DAP flavour ([`Python`]): debug-mcp's own debugger in the program
//! (`own.rs`, `session.py`, `stops.py`), or debugpy. Recognising a Python command line, the
//! files debug-mcp puts first on the debuggee's `PYTHONPATH` (the value probe, the tracer and
//! the debugger, and a `sitecustomize.py` that starts them), the `launch` arguments debugpy's
//! adapter takes, and the ways both share (scope names, runpy's frames, `repr` values,
//! logpoint messages that do not say whose they are).

mod helpers;
mod own;
pub(crate) mod trace;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde_json::{json, Value};

use crate::dap::flavour::{Flavour, Launched, Offered};
use crate::dap::Client;
use crate::debugger::limits::clip;
use crate::debugger::limits::VALUE_MAX;
use crate::debugger::model::{logpoint_parts, Part};
use crate::debugger::script;
use crate::debugger::{Code, Failure};
use crate::process::{self, Debuggee, SpawnError};
use crate::shell::CommandLine;
use helpers::PROBE;
pub(crate) use helpers::{helper_dir, keep_compiled};

/// What `launch` runs: a script or a module, with its arguments.
#[derive(Debug, PartialEq)]
pub(crate) enum Target {
    Program(PathBuf),
    Module(String),
}

#[derive(Debug, PartialEq)]
pub(crate) struct Program {
    pub(crate) interpreter: String,
    pub(crate) python_args: Vec<String>,
    pub(crate) target: Target,
    pub(crate) args: Vec<String>,
    pub(crate) env: Vec<(String, String)>,
    /// Where it runs, when not the server's directory.
    pub(crate) cwd: Option<PathBuf>,
    /// Text its stdin reads (through sitecustomize.py: debugpy's launcher owns its stdin).
    pub(crate) stdin: Option<String>,
}

impl Program {
    /// Whether the interpreter is told one of the one-letter `flags` (`-I`, or within `-uIB`).
    fn has_flag(&self, flags: &[char]) -> bool {
        self.python_args.iter().any(|arg| {
            arg.strip_prefix('-').is_some_and(|letters| {
                letters.chars().all(|c| c.is_ascii_alphabetic())
                    && !letters.starts_with(['W', 'X'])
                    && letters.contains(flags)
            })
        })
    }

    /// Whether the program can import from our `PYTHONPATH` (`-I` and `-E` ignore it).
    pub(crate) fn reads_pythonpath(&self) -> bool {
        !self.has_flag(&['I', 'E'])
    }

    /// Whether the program loads our sitecustomize.py (`-S` skips the site module).
    pub(crate) fn loads_sitecustomize(&self) -> bool {
        self.reads_pythonpath() && !self.has_flag(&['S'])
    }
}

/// Whether a program is a Python interpreter: `python`, `python3`, `python3.11`, a venv's
/// `bin/python`.
pub(crate) fn is_python(program: &str) -> bool {
    let name = Path::new(program).file_name().and_then(|n| n.to_str()).unwrap_or_default();
    name.strip_prefix("python")
        .is_some_and(|rest| rest.chars().all(|c| c.is_ascii_digit() || c == '.'))
}

/// Programs that run Python rather than being it: shells and environment wrappers.
const WRAPPERS: &[&str] =
    &["sh", "bash", "dash", "zsh", "uv", "poetry", "pipenv", "pdm", "hatch", "tox", "nox", "make"];

/// Interpreter options that take the next word as their value.
const OPTIONS_WITH_VALUE: &[&str] = &["-W", "-X", "--check-hash-based-pycs"];

pub(crate) fn parse(command: CommandLine) -> Result<Program, String> {
    let command = through_shebang(command)?;
    let CommandLine { env, words, cwd, stdin, .. } = command;
    let mut words = words.into_iter();
    let interpreter = words.next().expect("shell::split never returns an empty command");
    let mut python_args = Vec::new();
    let mut target = None;
    while let Some(word) = words.next() {
        match word.as_str() {
            "-m" => {
                let module = words.next().ok_or("`-m` needs a module name")?;
                target = Some(Target::Module(module));
                break;
            }
            "-c" => {
                return Err(
                    "`python -c` is not supported: put the code in a file and run that".into()
                )
            }
            option if OPTIONS_WITH_VALUE.contains(&option) => {
                python_args.push(word);
                python_args.extend(words.next());
            }
            option if option.starts_with('-') && option != "-" => python_args.push(word),
            _ => {
                let path = match &cwd {
                    Some(cwd) => cwd.join(&word),
                    None => std::path::absolute(&word).unwrap_or_else(|_| PathBuf::from(&word)),
                };
                target = Some(Target::Program(path));
                break;
            }
        }
    }
    let target = target.ok_or("the command names no script or module: e.g. `python app.py`")?;
    Ok(Program { interpreter, python_args, target, args: words.collect(), env, cwd, stdin })
}

/// A command whose program is not an interpreter but a script with a Python `#!` line (a
/// console script such as `venv/bin/pytest`, `flask`) runs as that interpreter with the
/// script: `python3 /path/to/pytest args`, which debugpy can launch. A script for another
/// interpreter cannot be; a binary is taken for a Python interpreter with another name.
fn through_shebang(command: CommandLine) -> Result<CommandLine, String> {
    if is_python(&command.words[0]) {
        return Ok(command);
    }
    let name = Path::new(&command.words[0]).file_name().and_then(|n| n.to_str()).unwrap_or("");
    if WRAPPERS.contains(&name) {
        return Err(format!(
            "`{name}` is not Python: debugpy starts the Python program itself, so give the \
             Python command that `{name}` would run (`.venv/bin/python app.py`, \
             `.venv/bin/pytest -q tests/`); a shell or a wrapper in front of Python is not \
             followed"
        ));
    }
    match command.shebang() {
        None => Ok(command),
        Some((interpreter, script)) if interpreter.first().is_some_and(|i| is_python(i)) => {
            let mut words = interpreter;
            words.push(script.display().to_string());
            words.extend(command.words.into_iter().skip(1));
            Ok(CommandLine { words, ..command })
        }
        Some((interpreter, _)) => Err(format!(
            "`{}` is a script for `{}`, not for Python: run Python programs as `python app.py`, \
             `python -m module`, or a console script such as `venv/bin/pytest`",
            command.words[0],
            interpreter.join(" ")
        )),
    }
}

/// debugpy's adapter, started for a program: the interpreter it runs under and a DAP
/// client on its pipes.
pub(crate) struct Adapter {
    pub(crate) program: Program,
    pub(crate) helpers: PathBuf,
    /// The interpreter running the adapter (and so debugpy), for messages about it.
    pub(crate) python: String,
    pub(crate) process: Debuggee,
    pub(crate) client: Client,
}

/// The adapter ended early (or never spoke DAP): why, in its own words. Most often debugpy
/// is missing for `python`, and the failure then gives the command that installs it; else
/// the adapter's exit, its stderr, and what it wrote on the protocol channel that was not DAP.
pub(crate) fn adapter_failed(adapter: &mut Debuggee, python: &str, client: &Client) -> Failure {
    let exit = adapter.finish(std::time::Duration::from_millis(500));
    adapter.settle_output();
    let noise = client.noise();
    let stderr = adapter.output().stderr_text();
    if stderr.contains("No module named") && stderr.contains("debugpy") {
        return Failure::new(
            Code::NoDebugpy,
            format!(
                "debugpy is not installed for {python}: run `{python} -m pip install debugpy` \
                 (or set DEBUG_MCP_DEBUGPY_PYTHON to an interpreter that has it)"
            ),
        );
    }
    let words: Vec<&str> =
        [stderr.trim(), noise.trim()].into_iter().filter(|w| !w.is_empty()).collect();
    let words = match words.is_empty() {
        true => "it printed nothing".to_string(),
        false => crate::debugger::limits::clip(&words.join("\n"), 2000),
    };
    Failure::new(
        Code::AdapterFailed,
        format!(
            "debugpy's adapter (`{python} -m debugpy.adapter`) ended ({}) before the program \
             could start: {words}",
            exit.describe()
        ),
    )
}

/// Parses `command` and starts `python -m debugpy.adapter` for it, under
/// `DEBUG_MCP_DEBUGPY_PYTHON` if set, else the program's own interpreter.
pub(crate) fn start_adapter(command: CommandLine) -> Result<Adapter, Failure> {
    let program = parse(command).map_err(|m| Failure::new(Code::InvalidCommand, m))?;
    let helpers = helper_dir().map_err(|m| Failure::new(Code::Internal, m))?;
    let python =
        std::env::var("DEBUG_MCP_DEBUGPY_PYTHON").unwrap_or_else(|_| program.interpreter.clone());
    let spec = process::Spec {
        program: python.clone(),
        // `-m debugpy.adapter`, through our guard on the ports it listens on (adapter.py).
        args: vec![helpers.join(helpers::ADAPTER_FILE).display().to_string()],
        // The command's NAME=value words reach the adapter and its launcher too.
        env: program.env.clone(),
        ..process::Spec::default()
    };
    let (process, stdin, stdout) = Debuggee::spawn_adapter(&spec).map_err(|e| match e {
        SpawnError::NotFound(_) => Failure::new(Code::CommandNotFound, e.to_string()),
        SpawnError::Other(..) => Failure::new(Code::SpawnFailed, e.to_string()),
    })?;
    Ok(Adapter { program, helpers, python, process, client: Client::new(stdin, stdout) })
}

/// An expression that puts the probe into the program it is evaluated in and gives the
/// module: registered in `sys.modules` as `debug_mcp_probe`, and with TCP_NODELAY turned on
/// (`nodelay`), the two things sitecustomize.py and our `PYTHONPATH` bring a program we
/// launch normally. For a program that did not get them (attached to; run with -I, -E or -S).
/// It binds no name in the frame, and holds no `{` or `}`, so a logpoint's message can hold it.
pub(crate) fn install_probe() -> &'static str {
    static INSTALL: OnceLock<String> = OnceLock::new();
    INSTALL.get_or_init(|| {
        let source = base64(PROBE.as_bytes());
        format!(
            "(lambda m: (exec(__import__('base64').b64decode('{source}'), m.__dict__), \
             __import__('sys').modules.__setitem__('debug_mcp_probe', m), m.nodelay(), m)[3])\
             (__import__('types').ModuleType('debug_mcp_probe'))"
        )
    })
}

/// How an expression reaches the probe: by import, or, when the program ignores our
/// `PYTHONPATH`, from `sys.modules` once `install_probe` has run there (it runs at the first
/// use).
pub(crate) fn probe_reference(importable: bool) -> String {
    if importable {
        "__import__('debug_mcp_probe')".into()
    } else {
        format!("(__import__('sys').modules.get('debug_mcp_probe') or {})", install_probe())
    }
}

/// Where sitecustomize.py finds the text the program's stdin reads (Base64).
const STDIN_VARIABLE: &str = "DEBUG_MCP_STDIN";

/// Set in a session's program: it runs under pydevd (see sitecustomize.py).
const SESSION_VARIABLE: &str = "DEBUG_MCP_SESSION";

/// pydevd's limit on the members of a container it lists.
const CONTAINER_ITEMS: &str = "PYDEVD_CONTAINER_RANDOM_ACCESS_MAX_ITEMS";

/// The program's `PYTHONPATH` with our helpers first: after them, the one the command sets
/// (its last assignment), else the server's own.
pub(crate) fn python_path(env: &[(String, String)], helpers: &Path) -> String {
    let inherited = env
        .iter()
        .rev()
        .find(|(k, _)| k == "PYTHONPATH")
        .map(|(_, v)| v.clone())
        .or_else(|| std::env::var("PYTHONPATH").ok())
        .filter(|p| !p.is_empty());
    match inherited {
        Some(rest) => format!("{}:{rest}", helpers.display()),
        None => helpers.display().to_string(),
    }
}

/// The arguments of debugpy's `launch` request.
pub(crate) fn launch_arguments(program: &Program, helpers: &Path) -> Value {
    let mut env: serde_json::Map<String, Value> =
        program.env.iter().map(|(k, v)| (k.clone(), Value::from(v.as_str()))).collect();
    env.insert("PYTHONPATH".into(), python_path(&program.env, helpers).into());
    // sitecustomize.py shortens pydevd's wait at exit in a session's processes.
    env.insert(SESSION_VARIABLE.into(), "1".into());
    if let Some(text) = &program.stdin {
        env.insert(STDIN_VARIABLE.into(), base64(text.as_bytes()).into());
    }
    // pydevd lists at most 500 members of a container; debug-variables pages through all.
    if std::env::var_os(CONTAINER_ITEMS).is_none() {
        env.entry(CONTAINER_ITEMS).or_insert("1000000".into());
    }
    let cwd = program.cwd.clone().or_else(|| std::env::current_dir().ok());
    let cwd = cwd.map(|d| d.display().to_string()).unwrap_or_default();
    let mut arguments = json!({
        "name": "debug-mcp",
        "type": "python",
        "request": "launch",
        "python": [program.interpreter],
        "pythonArgs": program.python_args,
        "args": program.args,
        "cwd": cwd,
        "env": env,
        "console": "internalConsole",
        "justMyCode": false,
        "subProcess": false,
        "stopOnEntry": false,
        "redirectOutput": true,
    });
    match &program.target {
        Target::Program(path) => arguments["program"] = path.display().to_string().into(),
        Target::Module(module) => arguments["module"] = module.as_str().into(),
    }
    arguments
}

/// Python sessions, as a DAP flavour: debug-mcp's own debugger in the program (`own.rs`), or
/// debugpy (attaching to `python -m debugpy --listen`, or asked for). Both speak debugpy's
/// dialect (scope names, `repr` values, logpoint messages).
#[derive(Clone)]
pub(crate) struct Python {
    debugpy: bool,
}

impl Python {
    /// debug-mcp's own debugger, which needs nothing installed.
    pub(crate) const OWN: Python = Python { debugpy: false };
    pub(crate) const DEBUGPY: Python = Python { debugpy: true };
}

impl Flavour for Python {
    fn language(&self) -> &str {
        "python"
    }

    fn adapter(&self) -> &str {
        match self.debugpy {
            true => "debugpy",
            false => "the Python debugger",
        }
    }

    fn start(&self, command: &CommandLine, stop_on_entry: bool) -> Result<Launched, Failure> {
        if !self.debugpy {
            return own::start(command, stop_on_entry);
        }
        let Adapter { program, helpers, python, process, client } = start_adapter(command.clone())?;
        let mut arguments = launch_arguments(&program, &helpers);
        arguments["stopOnEntry"] = stop_on_entry.into();
        Ok(Launched {
            client,
            adapter: process,
            arguments,
            // A program that skips our sitecustomize.py (and perhaps our PYTHONPATH) gets the
            // probe and TCP_NODELAY at its first stop, as an attached one does.
            prepared: program.loads_sitecustomize(),
            label: python,
            request: "launch",
            output: None,
            arrivals: None,
        })
    }

    fn adapter_failed(&self, adapter: &mut Debuggee, client: &Client, label: &str) -> Failure {
        match self.debugpy {
            true => adapter_failed(adapter, label, client),
            false => own::ended_early(adapter),
        }
    }

    /// debugpy patches `subprocess`, `os.fork` and `multiprocessing` in the program so that every
    /// Python child connects back to the adapter, waits, and is offered with `debugpyAttach`.
    /// Our own debugger leaves children undebugged.
    fn follow_children(&self, arguments: &mut Value) -> bool {
        arguments["subProcess"] = self.debugpy.into();
        self.debugpy
    }

    /// Our own debugger is the program.
    fn adapter_is_program(&self) -> bool {
        !self.debugpy
    }

    fn pauses_as_it_loads(&self) -> bool {
        false
    }

    /// debugpy runs a child through pydevd (`python pydevd.py --port … --file prog args`), a
    /// forked one keeps its parent's (launcher's) command line (`python -X frozen_modules=off
    /// …/debugpy --connect … --adapter-access-token T prog args`), and a multiprocessing spawn
    /// child is `python -c "…pydevd…spawn_main(…)" --multiprocessing-fork …`.
    fn command_shown(&self, command: &str) -> String {
        let python = command.split(' ').next().unwrap_or_default();
        if let Some((_, program)) =
            command.split_once(" --file ").filter(|_| command.contains("pydevd"))
        {
            return format!("{python} {program}");
        }
        if command.contains("/debugpy --connect ") {
            if let Some((_, rest)) = command.split_once(" --adapter-access-token ") {
                let program = rest.split_once(' ').map_or("", |(_, program)| program);
                return format!("{python} {program}");
            }
        }
        // `-c "import sys; …; pydevd.settrace(…); CODE" args`: the program's own `-c CODE`.
        let settrace = command.rfind("pydevd.settrace(").filter(|_| command.contains(" -c "));
        if let Some(rest) = settrace.and_then(|at| command[at..].split_once("); ")) {
            return format!("{python} -c {}", rest.1);
        }
        command.to_string()
    }

    /// `debugpyAttach`: the parent's launch arguments, `subProcessId`, and where the adapter
    /// listens for the child's session (`connect: {host, port}`).
    fn offered(&self, event: &Value) -> Option<Offered> {
        if event["type"] != "event" || event["event"] != "debugpyAttach" {
            return None;
        }
        let mut arguments = event["body"].clone();
        let host = arguments.pointer("/connect/host")?.as_str()?.to_string();
        let port = u16::try_from(arguments.pointer("/connect/port")?.as_u64()?).ok()?;
        let address = crate::net::socket_address(&host, port).ok()?;
        arguments["request"] = "attach".into();
        Some(Offered { address, arguments })
    }

    fn attach_arguments(&self) -> Value {
        json!({"name": "debug-mcp", "type": "python", "request": "attach", "justMyCode": false,
               "subProcess": false, "redirectOutput": true})
    }

    /// debugpy's own `pathMappings`: it places breakpoints at the remote paths and answers
    /// frames in the local ones.
    fn map_paths(
        &self,
        arguments: &mut Value,
        mappings: &[crate::debugger::model::PathMapping],
    ) -> bool {
        let mappings: Vec<Value> = mappings
            .iter()
            .map(|m| json!({"localRoot": m.local.display().to_string(), "remoteRoot": m.remote}))
            .collect();
        arguments["pathMappings"] = mappings.into();
        self.debugpy
    }

    /// debugpy's `rules`: library code (the standard library, installed packages, frozen
    /// modules) is not traced, so pydevd itself never stops at what it raises and catches,
    /// and its exceptions stop where they reach the program's own code; the files that hold
    /// breakpoints stay traced (a path rule is checked before the patterns).
    fn pass_over_libraries(&self, launch: &mut Value, keep: &[PathBuf]) -> bool {
        let mut rules: Vec<Value> = keep
            .iter()
            .map(|file| file.display().to_string())
            .filter(|file| is_library(file))
            .map(|file| json!({"path": file, "include": true}))
            .collect();
        for pattern in LIBRARY_PATTERNS {
            rules.push(json!({"path": pattern, "include": false}));
        }
        launch["rules"] = rules.into();
        true
    }

    fn is_exit(&self, class: &str) -> bool {
        class == "SystemExit"
    }

    fn exception_filters(&self, state: &str) -> Value {
        match state {
            "all" => json!(["raised", "uncaught"]),
            "uncaught" => json!(["uncaught"]),
            "userUnhandled" => json!(["uncaught", "userUnhandled"]),
            _ => json!([]),
        }
    }

    /// debugpy "verifies" a breakpoint on a line with no code (a comment, a blank line before
    /// the first statement) at line 0, where it never stops.
    fn placed_line(&self, breakpoint: &Value) -> Result<Option<u64>, String> {
        match breakpoint["line"].as_u64() {
            Some(0) => Err("Python cannot stop on that line: it holds no code (a comment, a \
                            blank line or a docstring?); choose a line with a statement"
                .into()),
            line => Ok(line),
        }
    }

    /// debugpy marks a logpoint's message with a `source` (empty: no path or line).
    fn is_logpoint_output(&self, body: &Value) -> bool {
        body.get("source").is_some()
    }

    fn logpoint_fits(&self, template: &str, text: &str) -> bool {
        template_fits(template, text)
    }

    /// `x={x!r}` becomes `{P.mark('1')}x={P.part('eA==', 'r', '')}` (Base64 keeps braces and
    /// quotes away from debugpy's message parser); literal braces become `{chr(123)}`.
    fn logpoint_message(&self, id: &str, template: &str, importable: bool) -> String {
        let probe = probe_reference(importable);
        // Our ids are letters and digits: they need no quoting.
        let mut message = format!("{{{probe}.mark('{id}')}}");
        for part in logpoint_parts(template) {
            match part {
                Part::Text(text) => {
                    for c in text.chars() {
                        match c {
                            '{' => message.push_str("{chr(123)}"),
                            '}' => message.push_str("{chr(125)}"),
                            c => message.push(c),
                        }
                    }
                }
                Part::Expression(expression) => {
                    let (expression, conversion, spec) = f_string_field(expression);
                    message.push_str(&format!(
                        "{{{probe}.part('{}', '{conversion}', '{}')}}",
                        base64(expression.as_bytes()),
                        base64(spec.as_bytes())
                    ));
                }
            }
        }
        message
    }

    fn logpoint_owner<'t>(&self, text: &'t str) -> Option<(&'t str, &'t str)> {
        text.strip_prefix("\x1elp:")?.split_once('\x1e')
    }

    fn scope_names(&self, scope: &str) -> Result<&'static [&'static str], String> {
        match scope {
            "local" => Ok(&["Locals"]),
            "global" => Ok(&["Globals"]),
            "all" => Ok(&["Locals", "Globals"]),
            other => Err(format!("Python frames have `local` and `global` scopes, not `{other}`")),
        }
    }

    fn scope_kind(&self, name: &str) -> &'static str {
        if name == "Locals" {
            "local"
        } else {
            "global"
        }
    }

    /// pydevd groups dunder names ("special variables"), class-valued names and
    /// function-valued ones: the first are left out; class-valued names are listed in their
    /// place; function-valued ones too in a frame's scope (an object's are its methods).
    fn group(&self, name: &str, in_scope: bool) -> Option<bool> {
        match name {
            "class variables" => Some(true),
            "function variables" => Some(in_scope),
            // A container's length: the list's own count says it.
            "len()" => Some(false),
            _ if name.starts_with("special variables") => Some(false),
            _ => None,
        }
    }

    fn value(&self, kind: &str, text: &str) -> Value {
        match kind {
            "int" | "float" => serde_json::from_str::<Value>(text).unwrap_or_else(|_| text.into()),
            "bool" => Value::Bool(text == "True"),
            "NoneType" => Value::Null,
            "str" => {
                let text = python_string(text).unwrap_or_else(|| text.into());
                clip(&text, VALUE_MAX).into()
            }
            _ => clip(text, VALUE_MAX).into(),
        }
    }

    /// debugpy starts the program through runpy; those frames are its, not the user's.
    fn is_startup_frame(&self, frame: &Value) -> bool {
        frame
            .pointer("/source/path")
            .and_then(Value::as_str)
            .is_some_and(|p| p.ends_with("runpy.py"))
    }

    fn is_library(&self, path: &str) -> bool {
        is_library(path)
    }

    fn probe(
        &self,
        expression: &str,
        importable: bool,
        max_chars: Option<usize>,
    ) -> Option<String> {
        let probe = probe_reference(importable);
        let expression = base64(expression.as_bytes());
        Some(match max_chars {
            Some(limit) => format!("{probe}.hit('{expression}', {limit})"),
            None => format!("{probe}.hit('{expression}')"),
        })
    }

    /// The probe answers a marker, `T` or `F` (was the value cut?), then the JSON.
    fn probe_result<'t>(&self, text: &'t str) -> Option<(bool, &'t str)> {
        let at = text.find("\x1edmcp:")?;
        script::flagged(&text[at + "\x1edmcp:".len()..])
    }

    fn install_probe(&self) -> &'static str {
        install_probe()
    }

    /// debugpy keeps the old value, and says nothing, when `value` fails: so it is evaluated
    /// once, where a failure shows, and handed over through the probe.
    fn hold(&self, value: &str) -> Option<(String, &'static str)> {
        let held = format!(
            "(__import__('debug_mcp_probe').__dict__.__setitem__('held', ({value})), \
             __import__('debug_mcp_probe').held)[1]"
        );
        Some((held, "__import__('debug_mcp_probe').__dict__.pop('held')"))
    }

    /// Absolute in the program's own working directory (a program started as `python app.py`
    /// has `__main__.__file__ == 'app.py'`). debugpy does not answer `loadedSources`.
    fn loaded_files(&self) -> Option<&'static str> {
        Some(
            "sorted({__import__('os').path.abspath(f) \
         for m in list(__import__('sys').modules.values()) \
         for f in [getattr(m, '__file__', None)] if isinstance(f, str)})",
        )
    }

    /// debug-mcp's own helpers, which debugpy's launcher imports.
    fn is_helper(&self, file: &str) -> bool {
        helper_dir().is_ok_and(|helpers| Path::new(file).starts_with(helpers))
    }
}

/// An f-string field split as Python splits it: the expression, its conversion (`r`, `s`,
/// `a` or empty) and its format spec. A `!` or `:` counts only outside brackets and quotes
/// (`d['a:b']`, `x[1:2]`); `:=` and `!=` are operators.
fn f_string_field(field: &str) -> (&str, &str, &str) {
    let bytes = field.as_bytes();
    let (mut depth, mut quote, mut i) = (0i32, None::<u8>, 0);
    let mut bang = None;
    while i < bytes.len() {
        let c = bytes[i];
        match quote {
            Some(_) if c == b'\\' => i += 1,
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None => match c {
                b'\'' | b'"' => quote = Some(c),
                b'(' | b'[' | b'{' => depth += 1,
                b')' | b']' | b'}' => depth -= 1,
                b'!' if depth == 0 && bytes.get(i + 1) != Some(&b'=') => bang = Some(i),
                b':' if depth == 0 && bytes.get(i + 1) != Some(&b'=') => {
                    let spec = &field[i + 1..];
                    return match bang {
                        Some(b) => (&field[..b], &field[b + 1..i], spec),
                        None => (&field[..i], "", spec),
                    };
                }
                _ => {}
            },
        }
        i += 1;
    }
    match bang {
        Some(b) => (&field[..b], &field[b + 1..], ""),
        None => (field, "", ""),
    }
}

/// The string a Python `repr` of a `str` stands for, or `None` when `text` is not one (debugpy
/// cuts long values, for one).
fn python_string(text: &str) -> Option<String> {
    let quote = text.chars().next().filter(|q| *q == '\'' || *q == '"')?;
    let body = text.strip_prefix(quote)?.strip_suffix(quote)?;
    let mut out = String::with_capacity(body.len());
    let mut chars = body.chars();
    let hex = |chars: &mut std::str::Chars, n: usize| -> Option<char> {
        let digits: String = chars.by_ref().take(n).collect();
        if digits.len() != n {
            return None;
        }
        char::from_u32(u32::from_str_radix(&digits, 16).ok()?)
    };
    while let Some(c) = chars.next() {
        if c == quote {
            return None; // unescaped: not one literal
        }
        if c != '\\' {
            out.push(c);
            continue;
        }
        let escaped = chars.next()?;
        out.push(match escaped {
            '\\' | '\'' | '"' => escaped,
            'n' => '\n',
            'r' => '\r',
            't' => '\t',
            'a' => '\u{7}',
            'b' => '\u{8}',
            'f' => '\u{c}',
            'v' => '\u{b}',
            '0' => '\0',
            'x' => hex(&mut chars, 2)?,
            'u' => hex(&mut chars, 4)?,
            'U' => hex(&mut chars, 8)?,
            _ => return None,
        });
    }
    Some(out)
}

/// Whether a frame's file is Python's own or an installed package's, not the program's.
fn is_library(path: &str) -> bool {
    ["/lib/python3.", "/site-packages/", "/dist-packages/"].iter().any(|part| path.contains(part))
        || path.starts_with("<frozen")
}

/// What [`is_library`] says, as pydevd's path patterns.
const LIBRARY_PATTERNS: [&str; 4] =
    ["**/lib/python3.*/**", "**/site-packages/**", "**/dist-packages/**", "<frozen *>"];

/// Whether `text` could be `template` with its `{expression}` parts filled in:
/// the literal pieces appear in order, the first at the start and the last at
/// the end.
fn template_fits(template: &str, text: &str) -> bool {
    let mut literals = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        literals.push(&rest[..open]);
        match rest[open..].find('}') {
            Some(close) => rest = &rest[open + close + 1..],
            None => return false,
        }
    }
    literals.push(rest);
    if literals.len() == 1 {
        return text == template;
    }
    let (first, last) = (literals[0], literals[literals.len() - 1]);
    if !text.starts_with(first) || !text.ends_with(last) {
        return false;
    }
    let mut at = first.len();
    for piece in &literals[1..literals.len() - 1] {
        match text[at..].find(piece) {
            Some(found) => at += found + piece.len(),
            None => return false,
        }
    }
    text.len() - at >= last.len()
}

/// `value` as JSON in ASCII (`\u00e9` for `é`), which any Python reads from its environment
/// whatever its locale (3.6 in the C locale decodes it as ASCII), without base64's module.
pub(crate) fn ascii_json(value: &Value) -> String {
    let text = value.to_string();
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            // Outside JSON's strings there is only ASCII: each is inside one.
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        }
    }
    out
}

/// Standard Base64, so that an expression reaches the probe without `{` or `}`.
pub(crate) fn base64(bytes: &[u8]) -> String {
    const TABLE: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(TABLE[(n >> (18 - 6 * i)) as usize & 63]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shell;

    #[test]
    fn recognises_interpreters() {
        for (program, python) in [
            ("python", true),
            ("python3", true),
            ("python3.11", true),
            ("/v/.venv/bin/python", true),
            ("pythonw", false),
            ("node", false),
            ("ipython", false),
        ] {
            assert_eq!(is_python(program), python, "{program}");
        }
    }

    #[test]
    fn parses_command_lines() {
        let check = |line: &str, expected: &str| {
            let got = match parse(shell::split(line).unwrap()) {
                Ok(p) => {
                    let target = match p.target {
                        Target::Program(path) => {
                            path.file_name().unwrap().to_string_lossy().into_owned()
                        }
                        Target::Module(m) => format!("-m {m}"),
                    };
                    format!("{} {:?} {target} {:?}", p.interpreter, p.python_args, p.args)
                }
                Err(e) => format!("error: {e}"),
            };
            assert_eq!(got, expected, "{line}");
        };
        check("python3 app.py --x 1", r#"python3 [] app.py ["--x", "1"]"#);
        check("python -u -X dev app.py", r#"python ["-u", "-X", "dev"] app.py []"#);
        check("python -m pkg.main a", r#"python [] -m pkg.main ["a"]"#);
        check(
            "python -c 'print(1)'",
            "error: `python -c` is not supported: put the code in a file and run that",
        );
        check("python -u", "error: the command names no script or module: e.g. `python app.py`");
        // A shell or an environment wrapper in front of Python: said plainly.
        let wrapped = parse(shell::split("uv run pytest").unwrap()).err().unwrap();
        assert!(wrapped.starts_with("`uv` is not Python: debugpy starts the Python program"));
        // A console script runs as the interpreter its #! line names, with the script.
        let test = crate::scratch::TestDir::new("console");
        let dir = &test.0;
        std::fs::write(dir.join("pytest"), "#!/v/bin/python3.11\nimport sys\n").unwrap();
        std::fs::write(dir.join("tool"), "#!/bin/sh\nexec x\n").unwrap();
        let pytest = dir.join("pytest").display().to_string();
        check(&format!("{pytest} -q t.py"), r#"/v/bin/python3.11 [] pytest ["-q", "t.py"]"#);
        let tool = dir.join("tool").display().to_string();
        check(
            &tool,
            &format!(
                "error: `{tool}` is a script for `/bin/sh`, not for Python: run Python programs \
                 as `python app.py`, `python -m module`, or a console script such as \
                 `venv/bin/pytest`"
            ),
        );
    }

    #[test]
    fn knows_which_flags_skip_our_pythonpath_and_sitecustomize() {
        let program = |line: &str| parse(shell::split(line).unwrap()).unwrap();
        for (line, pythonpath, site) in [
            ("python app.py", true, true),
            ("python -u -X dev app.py", true, true),
            ("python -I app.py", false, false),
            ("python -uE app.py", false, false),
            ("python -S app.py", true, false),
            ("python -W Ignore app.py", true, true),
            ("python -WIgnore app.py", true, true),
            ("python app.py -I", true, true),
        ] {
            let program = program(line);
            assert_eq!(program.reads_pythonpath(), pythonpath, "{line}");
            assert_eq!(program.loads_sitecustomize(), site, "{line}");
        }
    }
}

#[cfg(test)]
mod value_tests {
    use super::*;

    #[test]
    fn f_string_fields_split_like_python() {
        assert_eq!(f_string_field("x"), ("x", "", ""));
        assert_eq!(f_string_field("x!r"), ("x", "r", ""));
        assert_eq!(f_string_field("total:.2f"), ("total", "", ".2f"));
        assert_eq!(f_string_field("v!r:>10"), ("v", "r", ">10"));
        assert_eq!(f_string_field("d['a:b']"), ("d['a:b']", "", ""));
        assert_eq!(f_string_field("x[1:2]"), ("x[1:2]", "", ""));
        assert_eq!(f_string_field("a != b"), ("a != b", "", ""));
        assert_eq!(f_string_field("(y := 2)"), ("(y := 2)", "", ""));
    }

    #[test]
    fn logpoint_messages_are_marked_and_evaluated_part_by_part() {
        let message = Python::DEBUGPY.logpoint_message("3", "x={x!r} {{y}}", true);
        assert_eq!(
            message,
            "{__import__('debug_mcp_probe').mark('3')}x={__import__('debug_mcp_probe').part('eA==', 'r', '')} \
             {chr(123)}y{chr(125)}"
        );
        assert_eq!(Python::DEBUGPY.logpoint_owner("\x1elp:3\x1ex=1"), Some(("3", "x=1")));
        assert_eq!(Python::DEBUGPY.logpoint_owner("plain"), None);
    }

    #[test]
    fn python_string_reprs_become_strings() {
        for (repr, string) in [
            (r"'tick 1'", Some("tick 1")),
            (r#""it's""#, Some("it's")),
            (r"'a\tb\nc\'d\x1b\u20ac\U0001f600'", Some("a\tb\nc'd\u{1b}\u{20ac}\u{1f600}")),
            (r"''", Some("")),
            (r"'cut...", None),
            (r"'a'b'", None),
            (r"'\q'", None),
            (r"'\x1'", None),
            ("Point(x=1)", None),
        ] {
            assert_eq!(python_string(repr).as_deref(), string, "{repr}");
        }
    }

    #[test]
    fn logpoint_text_is_matched_to_its_template() {
        assert!(template_fits("total={total}", "total=1025.0"));
        assert!(template_fits("{a} and {b}!", "1 and 2!"));
        assert!(template_fits("plain", "plain"));
        assert!(!template_fits("plain", "plain text"));
        assert!(!template_fits("total={total}", "count=3"));
        assert!(!template_fits("x={x} y={y}", "x=1"));
        assert!(!template_fits("ab{x}ba", "aba"));
    }
}

#[cfg(test)]
mod base64_tests {
    #[test]
    fn json_in_ascii() {
        let value = serde_json::json!({"file": "/tmp/é/😀.py", "n": 1});
        let text = super::ascii_json(&value);
        assert_eq!(text, r#"{"file":"/tmp/\u00e9/\ud83d\ude00.py","n":1}"#);
        assert_eq!(serde_json::from_str::<serde_json::Value>(&text).unwrap(), value);
    }

    use super::*;

    #[test]
    fn encodes_base64() {
        for (input, expected) in
            [("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("{x}", "e3h9")]
        {
            assert_eq!(base64(input.as_bytes()), expected);
        }
    }
}
