//! Any debug adapter, as one DAP [`Flavour`]: built-in profiles for lldb-dap (C, C++, Rust,
//! Zig), Delve (Go) and gdb's DAP mode, and the adapters a `debug-mcp.json` file declares
//! (`config.rs`), such as Ruby's rdbg.
//!
//! These adapters have no probe: values are the adapter's own `evaluate` answers, typed here
//! (`value`, `summary_only`) and expanded one level when their text only sums them up
//! (`dap::typed`). Logpoint messages carry a mark that says whose they are, since the adapters
//! write them among their own console lines (lldb-dap) or the program's (Delve, with a `> [Go
//! 1]: ` prefix).

mod cargo;
mod config;
mod connect;
mod delve;
mod demangle;
pub(crate) mod functions;
mod go;
mod remote;
mod streams;
mod suite;
mod symbols;
mod values;

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{json, Value};

use crate::dap::flavour::{Flavour, Launched, Offered};
use crate::dap::Client;
use crate::debugger::{Code, Failure};
use crate::process::{self, Debuggee, SpawnError};
use crate::shell::CommandLine;

pub(crate) use config::Configured;
use connect::Connect;
use values::typed_text;

/// The mark before a logpoint message's owner, and after it.
const MARK: &str = "\u{1e}dmcp-lp:";

/// The built-in adapters, and what `language` names each.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Builtin {
    Lldb,
    Delve,
    Gdb,
}

/// `language` values that pick a built-in adapter.
pub(crate) const LANGUAGES: &[&str] = &["c", "cpp", "rust", "zig", "go", "lldb", "gdb"];

/// An adapter chosen for a command: what starts it and how it launches the program.
#[derive(Clone)]
pub(crate) struct Native(Arc<Profile>);

struct Profile {
    /// The adapter's name in messages (`lldb-dap`, `delve`, a configured name).
    name: String,
    language: String,
    program: String,
    args: Vec<String>,
    /// Where the adapter runs (Delve builds in the module's directory).
    cwd: Option<PathBuf>,
    env: Vec<(String, String)>,
    connect: Connect,
    request: &'static str,
    arguments: Value,
    /// The program's own output is the adapter's stdout and stderr.
    output_is_adapters: bool,
    /// Added to `launch` to stop at the first line.
    stop_on_entry: Option<(&'static str, Value)>,
    /// Text the adapter prints (stdout or stderr) once it waits for its client (`ready`).
    ready: Option<String>,
}

impl Native {
    /// Whether an adapter serves `command`: a configured one whose `match` fits (or whose
    /// name `language` gives), or the built-in one the command, `language` or breakpoint
    /// files point to. False: not a native program (Node's, then).
    pub(crate) fn claims(command: &CommandLine, language: Option<&str>, files: &[&str]) -> bool {
        let configured = Configured::load(command.cwd.as_deref()).ok().flatten();
        if configured.as_ref().is_some_and(|c| c.find(command, language, files).is_some()) {
            return true;
        }
        // An ELF file is enough to claim it; which adapter is `resolve`'s to read.
        let elf = |path: &Path| is_elf(path).then_some(Binary::Other);
        builtin_for(command, language, files, elf).is_some()
    }

    /// The adapter for `command` ([`Native::claims`]), ready to start: for a one-shot run
    /// (`run`, which `go test`'s own default flags fit) or a session.
    pub(crate) fn resolve(
        command: &CommandLine,
        language: Option<&str>,
        files: &[&str],
        run: bool,
    ) -> Result<Native, Failure> {
        let configured = Configured::load(command.cwd.as_deref())
            .map_err(|m| Failure::new(Code::InvalidArguments, m))?;
        if let Some(adapter) = configured.as_ref().and_then(|c| c.find(command, language, files)) {
            return adapter.profile(command).map(|p| Native(Arc::new(p)));
        }
        let found = builtin_for(command, language, files, binary_kind);
        let (builtin, binary) = found.ok_or_else(|| match language {
            Some(language) => Failure::new(
                Code::InvalidArguments,
                format!(
                    "invalid argument `language`: expected one of node, python, {}, or an \
                     adapter of debug-mcp.json, got \"{language}\"",
                    LANGUAGES.join(", ")
                ),
            )
            .with("field", "language".into()),
            None => Failure::new(
                Code::InvalidCommand,
                format!("no debug adapter fits `{}`", command.words.join(" ")),
            ),
        })?;
        let language = language.map(String::from);
        let profile = match builtin {
            Builtin::Delve => delve(command, None, run)?,
            Builtin::Gdb => gdb(command, language)?,
            Builtin::Lldb => match lldb_dap() {
                Some(adapter) => lldb(command, adapter, language, files, binary, None)?,
                None if gdb_version().is_some_and(|v| v >= 14) => gdb(command, language)?,
                None => return Err(not_installed("lldb-dap", "apt-get install lldb-19")),
            },
        };
        Ok(Native(Arc::new(profile)))
    }

    /// A core file's adapter: lldb-dap (or gdb 14 and newer), reading `core` with the
    /// `program` that dumped it. Nothing runs: the session stops where the program crashed.
    pub(crate) fn for_core(
        core: &Path,
        program: &Path,
        language: Option<&str>,
    ) -> Result<Native, Failure> {
        let arguments = json!({"name": "debug-mcp", "request": "attach",
            "program": program.display().to_string(), "coreFile": core.display().to_string()});
        let gdb = gdb_version().is_some_and(|v| v >= 14);
        let lldb = match (language, lldb_dap()) {
            (Some("gdb"), _) | (_, None) if gdb => None,
            (_, Some(adapter)) => Some(adapter),
            (_, None) => return Err(not_installed("lldb-dap", "apt-get install lldb-19")),
        };
        let kind = binary_kind(program);
        let language = match (language, kind) {
            (Some(l), _) if l != "gdb" && l != "lldb" => l.to_string(),
            (_, Some(Binary::Rust)) => "rust".into(),
            (_, Some(Binary::Go)) => "go".into(),
            _ => "c".into(),
        };
        let mut arguments = arguments;
        if lldb.is_some() {
            arguments["initCommands"] =
                symbols::init_commands(program, kind == Some(Binary::Rust)).into();
        }
        let adapter = match &lldb {
            Some(lldb) => Profile::lldb(lldb, arguments),
            None => Profile::gdb(arguments),
        };
        let cwd = program.parent().filter(|d| d.is_dir()).map(Path::to_path_buf);
        let profile = Profile { language, cwd, request: "attach", stop_on_entry: None, ..adapter };
        Ok(Native(Arc::new(profile)))
    }

    /// The adapter to attach to process `pid` with, by what its executable is: Delve for a Go
    /// program, lldb-dap for another native one; `None` for Node (its own inspector) or when
    /// `language` names Node or Python.
    pub(crate) fn for_pid(pid: u32, language: Option<&str>) -> Result<Option<Native>, Failure> {
        let exe = std::fs::read_link(format!("/proc/{pid}/exe")).map_err(|e| {
            Failure::new(
                Code::NoProcess,
                format!("cannot read process {pid}: {e} (is it running, and yours?)"),
            )
        })?;
        let name = exe.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        if matches!(language, Some("node" | "python")) || name.starts_with("node") {
            return Ok(None);
        }
        if crate::python::is_python(name) {
            return Err(Failure::new(
                Code::InvalidArguments,
                format!(
                    "process {pid} is Python ({}): attach to it by the port of `python -m \
                     debugpy --listen 127.0.0.1:5678 app.py` (`port`)",
                    exe.display()
                ),
            )
            .with("field", "pid".into()));
        }
        let program = exe.display().to_string();
        let go = language == Some("go") || binary_kind(&exe) == Some(Binary::Go);
        let profile = if go {
            if which("dlv").is_none() {
                return Err(not_installed("delve", "apt-get install delve golang-go"));
            }
            let arguments = json!({"name": "debug-mcp", "type": "go", "request": "attach",
                "mode": "local", "processId": pid});
            Profile::delve_here(arguments, &[])
        } else {
            let Some(adapter) = lldb_dap() else {
                return Err(not_installed("lldb-dap", "apt-get install lldb-19"));
            };
            let mut arguments = json!({"name": "debug-mcp", "type": "lldb-dap",
                "request": "attach", "pid": pid, "program": program});
            let rust = binary_kind(&exe) == Some(Binary::Rust);
            arguments["initCommands"] = symbols::init_commands(&exe, rust).into();
            let language = language.map(String::from);
            let language = language.unwrap_or_else(|| if rust { "rust" } else { "c" }.into());
            Profile { language, ..Profile::lldb(&adapter, arguments) }
        };
        let profile = Profile { request: "attach", stop_on_entry: None, ..profile };
        Ok(Some(Native(Arc::new(profile))))
    }
}

/// The built-in adapter a command needs, if any, and what `classify` made of its program when
/// it was read (an ELF file: Go's or not).
fn builtin_for(
    command: &CommandLine,
    language: Option<&str>,
    files: &[&str],
    classify: fn(&Path) -> Option<Binary>,
) -> Option<(Builtin, Option<Binary>)> {
    match language {
        Some("go") => return Some((Builtin::Delve, None)),
        Some("gdb") => return Some((Builtin::Gdb, None)),
        Some(l) if LANGUAGES.contains(&l) => return Some((Builtin::Lldb, None)),
        Some(_) => return None,
        None => {}
    }
    fn extension<'f>(f: &&'f str) -> &'f str {
        Path::new(*f).extension().and_then(|e| e.to_str()).unwrap_or("")
    }
    const NATIVE: &[&str] = &["c", "h", "cc", "cpp", "cxx", "hpp", "hh", "rs", "zig"];
    const SCRIPT: &[&str] = &["js", "mjs", "cjs", "ts", "mts", "cts", "jsx", "tsx", "py", "rb"];
    if files.iter().any(|f| extension(f) == "go") {
        return Some((Builtin::Delve, None));
    }
    if files.iter().any(|f| NATIVE.contains(&extension(f))) {
        return Some((Builtin::Lldb, None));
    }
    if files.iter().any(|f| SCRIPT.contains(&extension(f))) {
        return None;
    }
    let first = command.words.first()?;
    let name = Path::new(first).file_name().and_then(|n| n.to_str()).unwrap_or_default();
    if name == "go" {
        return Some((Builtin::Delve, None));
    }
    if cargo::is_cargo(command) {
        return Some((Builtin::Lldb, Some(Binary::Rust)));
    }
    // Interpreters and launchers are programs too: what they run is not theirs to debug.
    const LAUNCHERS: &[&str] = &[
        "node", "nodejs", "deno", "bun", "sh", "bash", "dash", "zsh", "env", "make", "time",
        "nice", "xargs", "timeout", "ruby", "perl",
    ];
    if LAUNCHERS.contains(&name) {
        return None;
    }
    let binary = classify(&in_cwd(command, first))?;
    let builtin = if binary == Binary::Go { Builtin::Delve } else { Builtin::Lldb };
    Some((builtin, Some(binary)))
}

#[derive(Clone, Copy, PartialEq)]
enum Binary {
    Go,
    Rust,
    Other,
}

fn is_elf(path: &Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 4];
    let file = std::fs::File::open(path);
    file.and_then(|mut f| f.read_exact(&mut head)).is_ok() && &head == b"\x7fELF"
}

/// An ELF executable, and what built it: Go (its build info) or Rust (its panic machinery),
/// read in one pass over the file.
fn binary_kind(path: &Path) -> Option<Binary> {
    if !is_elf(path) {
        return None;
    }
    let bytes = std::fs::read(path).ok()?;
    let has = |marker: &[u8]| bytes.windows(marker.len()).any(|w| w == marker);
    Some(match () {
        () if has(b"\xff Go buildinf") => Binary::Go,
        () if has(b"rust_panic") => Binary::Rust,
        () => Binary::Other,
    })
}

/// A word of the command as a path, against the command's working directory.
fn in_cwd(command: &CommandLine, word: &str) -> PathBuf {
    match &command.cwd {
        Some(cwd) => cwd.join(word),
        None => PathBuf::from(word),
    }
}

/// The program a command runs, found as the shell would: a path, or a name on PATH.
fn program_path(command: &CommandLine, word: &str) -> Result<String, Failure> {
    let path = in_cwd(command, word);
    if word.contains('/') {
        return match path.canonicalize() {
            Ok(path) => Ok(path.display().to_string()),
            Err(_) => Err(Failure::new(
                Code::FileNotFound,
                format!("{} does not exist: build the program first", path.display()),
            )),
        };
    }
    which(word).map(|p| p.display().to_string()).ok_or_else(|| {
        Failure::new(Code::CommandNotFound, format!("`{word}` is not a file here nor on PATH"))
    })
}

fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join(name)).find(|p| p.is_file())
}

fn not_installed(adapter: &str, install: &str) -> Failure {
    Failure::new(
        Code::NoAdapter,
        format!("{adapter} is not installed: install it with `{install}` (Debian, as root)"),
    )
}

/// `lldb-dap`, or the newest `lldb-dap-NN` on PATH.
fn lldb_dap() -> Option<String> {
    if which("lldb-dap").is_some() {
        return Some("lldb-dap".into());
    }
    let path = std::env::var_os("PATH")?;
    let mut found: Vec<(u32, String)> = std::env::split_paths(&path)
        .filter_map(|dir| std::fs::read_dir(dir).ok())
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().into_string().ok()?;
            let version = name.strip_prefix("lldb-dap-")?.parse().ok()?;
            Some((version, name))
        })
        .collect();
    found.sort();
    found.pop().map(|(_, name)| name)
}

/// gdb's major version, when gdb is on PATH.
fn gdb_version() -> Option<u32> {
    let output =
        crate::process::output_of(std::process::Command::new("gdb").arg("--version")).ok()?;
    let text = String::from_utf8_lossy(&output.stdout);
    let first = text.lines().next()?;
    let version = first.split_whitespace().last()?;
    version.split('.').next()?.parse().ok()
}

/// The command's `NAME=value` words as an object, as gdb and Delve take them.
fn env_object(command: &CommandLine) -> serde_json::Map<String, Value> {
    command.env.iter().map(|(k, v)| (k.clone(), Value::from(v.as_str()))).collect()
}

/// `NAME=value` words of the command, as lldb-dap takes them.
fn env_list(command: &CommandLine) -> Vec<String> {
    command.env.iter().map(|(k, v)| format!("{k}={v}")).collect()
}

fn cwd_of(command: &CommandLine) -> String {
    let cwd = command.dir();
    cwd.display().to_string()
}

/// lldb-dap for `command`, or (`built`) for a program cargo built for it, with its arguments.
fn lldb(
    command: &CommandLine,
    adapter: String,
    language: Option<String>,
    files: &[&str],
    binary: Option<Binary>,
    built: Option<(String, Vec<String>)>,
) -> Result<Profile, Failure> {
    let (program, args) = match (built, cargo::is_cargo(command)) {
        (Some(built), _) => built,
        (None, true) => {
            let programs = cargo::build(command)?;
            (cargo::one(command, &programs, files.first().copied())?, programs.args)
        }
        (None, false) => (program_path(command, &command.words[0])?, command.words[1..].to_vec()),
    };
    // The program is read only when choosing the adapter did not read it already.
    let rust = language.as_deref() == Some("rust")
        || files.iter().any(|f| f.ends_with(".rs"))
        || binary.or_else(|| binary_kind(Path::new(&program))) == Some(Binary::Rust);
    let mut arguments = json!({"name": "debug-mcp", "type": "lldb-dap", "request": "launch",
        "program": program, "args": args, "cwd": cwd_of(command),
        "env": env_list(command), "stopOnEntry": false});
    arguments["initCommands"] = symbols::init_commands(Path::new(&program), rust).into();
    let language = language.filter(|l| l != "lldb").unwrap_or_else(|| {
        let by_file = files.iter().find_map(|f| match Path::new(f).extension()?.to_str()? {
            "rs" => Some("rust"),
            "cc" | "cpp" | "cxx" | "hpp" | "hh" => Some("cpp"),
            "zig" => Some("zig"),
            _ => None,
        });
        by_file.unwrap_or(if rust { "rust" } else { "c" }).into()
    });
    Ok(Profile { language, cwd: command.cwd.clone(), ..Profile::lldb(&adapter, arguments) })
}

impl Profile {
    /// An adapter that launches the program as a C program's, from the server's directory;
    /// callers change what differs with struct update syntax.
    fn adapter(
        name: &str,
        program: &str,
        args: &[&str],
        connect: Connect,
        arguments: Value,
    ) -> Profile {
        Profile {
            name: name.into(),
            language: "c".into(),
            program: program.into(),
            args: args.iter().map(|a| a.to_string()).collect(),
            cwd: None,
            env: Vec::new(),
            connect,
            request: "launch",
            arguments,
            output_is_adapters: false,
            stop_on_entry: None,
            ready: None,
        }
    }

    /// lldb-dap (`program`: the `lldb-dap` or `lldb-dap-NN` found), on stdin and stdout.
    fn lldb(program: &str, arguments: Value) -> Profile {
        let stop_on_entry = Some(("stopOnEntry", true.into()));
        Profile {
            stop_on_entry,
            ..Profile::adapter("lldb-dap", program, &[], Connect::Stdio, arguments)
        }
    }

    /// gdb's DAP mode, on stdin and stdout (without styling: its errors would carry escapes).
    fn gdb(arguments: Value) -> Profile {
        let args = ["-q", "-nx", "-iex", "set style enabled off", "-i", "dap"];
        let stop_on_entry = Some(("stopAtBeginningOfMainSubprogram", true.into()));
        Profile {
            stop_on_entry,
            ..Profile::adapter("gdb", "gdb", &args, Connect::Stdio, arguments)
        }
    }

    /// Delve, connecting to a loopback port of ours (see `connect.rs`).
    fn delve(arguments: Value) -> Profile {
        let stop_on_entry = Some(("stopOnEntry", true.into()));
        Profile {
            language: "go".into(),
            stop_on_entry,
            ..Profile::adapter("delve", "dlv", &["dap"], Connect::Dials, arguments)
        }
    }

    /// Delve started here, with `env` (the command's), reading no system debug information
    /// (see `delve.rs`).
    fn delve_here(mut arguments: Value, env: &[(String, String)]) -> Profile {
        let mut env = env.to_vec();
        delve::without_system_debug_info(&mut env, &mut arguments);
        Profile { env, ..Profile::delve(arguments) }
    }
}

fn gdb(command: &CommandLine, language: Option<String>) -> Result<Profile, Failure> {
    match gdb_version() {
        Some(v) if v >= 14 => {}
        Some(v) => {
            return Err(Failure::new(
                Code::NoAdapter,
                format!(
                    "gdb {v} has no DAP mode (gdb 14 or newer has): install lldb-dap with \
                     `apt-get install lldb-19` (Debian, as root), or a newer gdb"
                ),
            ))
        }
        None => return Err(not_installed("gdb", "apt-get install gdb")),
    }
    let program = program_path(command, &command.words[0])?;
    // gdb takes `env` as an object (lldb-dap as a list of NAME=value).
    let arguments = json!({"name": "debug-mcp", "type": "gdb", "request": "launch",
        "program": program, "args": command.words[1..], "cwd": cwd_of(command),
        "env": env_object(command)});
    let language = language.filter(|l| l != "gdb").unwrap_or_else(|| "c".into());
    Ok(Profile { language, cwd: command.cwd.clone(), ..Profile::gdb(arguments) })
}

/// `go run [flags] PKG args`, `go test [flags] [PKG] [-args …]` or a built Go binary; with
/// `package`, that package's tests (one of those `go test ./...` runs). A one-shot `run` of
/// tests gets the flags `go test` itself adds (a session's waits at a breakpoint are not the
/// test's time: no `-test.timeout` there).
fn delve(command: &CommandLine, package: Option<&Path>, run: bool) -> Result<Profile, Failure> {
    delve_built(command, package, run, None)
}

/// [`delve`], the package's test binary built already (`built`): Delve runs it as it is.
fn delve_built(
    command: &CommandLine,
    package: Option<&Path>,
    run: bool,
    built: Option<&Path>,
) -> Result<Profile, Failure> {
    if which("dlv").is_none() {
        return Err(not_installed("delve", "apt-get install delve golang-go"));
    }
    let words = &command.words;
    let mut cwd = command.dir();
    let (mode, program, args, build_flags) = if is_go(command) {
        let go = go::read(&words[1..]).map_err(|why| Failure::new(Code::InvalidCommand, why))?;
        let flags = go::join_build_flags(&go.build_flags);
        let program = match package {
            Some(dir) => dir.to_path_buf(),
            None => cwd.join(go.package().map_err(|why| Failure::new(Code::InvalidCommand, why))?),
        };
        // `go test` runs a package's tests in its directory (their testdata/ is there).
        if go.mode == "test" && program.is_dir() {
            cwd = program.clone();
        }
        let mode = go.mode;
        let args = if run { go.with_defaults() } else { go.args };
        match built {
            Some(binary) => ("exec", binary.to_path_buf(), args, String::new()),
            None => (mode, program, args, flags),
        }
    } else {
        let program = PathBuf::from(program_path(command, &words[0])?);
        ("exec", program, words[1..].to_vec(), String::new())
    };
    // Delve builds in its own working directory, the module's: it ignores the launch `cwd`.
    let module = program
        .ancestors()
        .find(|dir| dir.join("go.mod").is_file())
        .map(Path::to_path_buf)
        .unwrap_or_else(|| cwd.clone());
    let output = crate::scratch::file_path("go").map_err(|e| {
        Failure::new(Code::SpawnFailed, format!("cannot make a place for Delve's build: {e}"))
    })?;
    let mut arguments = json!({"name": "debug-mcp", "type": "go", "request": "launch",
        "mode": mode, "program": program.display().to_string(), "args": args,
        "cwd": cwd.display().to_string(), "output": output.display().to_string(),
        "env": env_object(command)});
    if !build_flags.is_empty() {
        arguments["buildFlags"] = build_flags.into();
    }
    Ok(Profile {
        cwd: Some(module),
        output_is_adapters: true,
        ..Profile::delve_here(arguments, &command.env)
    })
}

/// Whether the command is `go …`.
fn is_go(command: &CommandLine) -> bool {
    Path::new(&command.words[0]).file_name().is_some_and(|n| n == "go")
}

/// What an adapter printed (its stdout and stderr), for the words of a failure.
fn said(adapter: &Debuggee) -> String {
    let (out, err, ..) = adapter.output().since(0, 0);
    crate::debugger::limits::clip(format!("{out}{err}").trim(), 2000)
}

impl Native {
    fn spawn_failure(&self, e: SpawnError) -> Failure {
        match e {
            SpawnError::NotFound(_) => Failure::new(
                Code::NoAdapter,
                format!("{} (`{}`) is not installed or not on PATH", self.0.name, self.0.program),
            ),
            SpawnError::Other(..) => Failure::new(Code::SpawnFailed, e.to_string()),
        }
    }
}

impl Native {
    fn launched(
        &self,
        client: Client,
        adapter: process::Debuggee,
        arguments: Value,
        output: Option<process::Output>,
    ) -> Launched {
        let profile = &self.0;
        Launched {
            client,
            adapter,
            arguments,
            prepared: true,
            label: format!("{} {}", profile.program, profile.args.join(" ")).trim().to_string(),
            request: profile.request,
            output,
            arrivals: None,
        }
    }
}

impl Flavour for Native {
    fn language(&self) -> &str {
        &self.0.language
    }

    fn failure_functions(&self) -> &'static [&'static str] {
        match self.0.language.as_str() {
            // t.Error, t.Errorf, t.Fatal, t.Fatalf and t.Fail all come here.
            "go" => &["testing.(*common).Fail"],
            // Where unwinding starts, after the panic hook printed the message.
            "rust" => &["rust_panic"],
            _ => &[],
        }
    }

    fn adapter(&self) -> &str {
        &self.0.name
    }

    fn start(&self, _: &CommandLine, stop_on_entry: bool) -> Result<Launched, Failure> {
        let profile = &self.0;
        let spec = process::Spec {
            program: profile.program.clone(),
            args: profile.args.clone(),
            env: profile.env.clone(),
            cwd: profile.cwd.clone(),
            ..process::Spec::default()
        };
        let mut arguments = profile.arguments.clone();
        let (mut adapter, client) = self.spawn_connected(spec, &mut arguments)?;
        if let (true, Some((key, value))) = (stop_on_entry, &profile.stop_on_entry) {
            arguments[*key] = value.clone();
        }
        // lldb-dap launching a program: its stdout and stderr apart.
        if profile.name == "lldb-dap"
            && profile.request == "launch"
            && arguments["coreFile"].is_null()
        {
            let output = crate::process::Output::default();
            match streams::Streams::open(&output) {
                Ok(streams) => {
                    let mut commands =
                        arguments["preRunCommands"].as_array().cloned().unwrap_or_default();
                    commands.extend(streams.commands().into_iter().map(Value::from));
                    arguments["preRunCommands"] = commands.into();
                    adapter.keep(Box::new(streams));
                    return Ok(self.launched(client, adapter, arguments, Some(output)));
                }
                Err(e) => {
                    crate::log::warn(format_args!("the program's stderr stays in its stdout: {e}"))
                }
            }
        }
        let output = profile.output_is_adapters.then(|| {
            let mut output = adapter.output().clone();
            // Delve's and rdbg's own lines among the program's.
            output.hide(|line| {
                line.starts_with("DAP server listening at: ") || line.starts_with("DEBUGGER: ")
            });
            output
        });
        Ok(self.launched(client, adapter, arguments, output))
    }

    fn follow_children(&self, _: &mut Value) -> bool {
        false
    }

    fn offered(&self, _: &Value) -> Option<Offered> {
        None
    }

    fn command_shown(&self, command: &str) -> String {
        command.to_string()
    }

    fn adapter_failed(&self, adapter: &mut Debuggee, _: &Client, label: &str) -> Failure {
        let said = said(adapter);
        let exit = adapter.try_exit().map_or("still running".into(), |e| e.describe());
        Failure::new(
            Code::AdapterFailed,
            format!(
                "{} (`{label}`) ended ({exit}) before the program could start: {said}",
                self.0.name
            ),
        )
    }

    /// A profile made to attach (a remote Delve) says its own arguments.
    fn attach_arguments(&self) -> Value {
        match self.0.request {
            "attach" => self.0.arguments.clone(),
            _ => json!({"name": "debug-mcp", "request": "attach"}),
        }
    }

    /// Delve's `substitutePath`: breakpoints given in local paths are placed at the paths the
    /// program was built with, and frames come back local.
    fn map_paths(
        &self,
        arguments: &mut Value,
        mappings: &[crate::debugger::model::PathMapping],
    ) -> bool {
        if self.0.name != "delve" {
            return false;
        }
        let rules: Vec<Value> = mappings
            .iter()
            .map(|m| json!({"from": m.local.display().to_string(), "to": m.remote}))
            .collect();
        arguments["substitutePath"] = rules.into();
        true
    }

    fn runs_elsewhere(&self) -> bool {
        self.0.arguments.get("gdb-remote-port").is_some()
    }

    fn sources_request(&self, named: &[&str]) -> Option<Value> {
        remote::sources_request(&self.0.name, &self.0.arguments, named)
    }

    fn sources(&self, answer: &Value) -> Vec<String> {
        remote::sources(answer)
    }

    fn map_paths_request(&self, mapping: &crate::debugger::model::PathMapping) -> Option<Value> {
        remote::map_paths_request(&self.0.name, mapping)
    }

    /// C++ `throw` for lldb-dap when every exception stops; crashes (signals) and Go panics
    /// stop without a filter.
    fn exception_filters(&self, state: &str) -> Value {
        match (state, self.0.name.as_str()) {
            ("all", "lldb-dap") => json!(["cpp_throw"]),
            _ => json!([]),
        }
    }

    fn placed_line(&self, breakpoint: &Value) -> Result<Option<u64>, String> {
        Ok(breakpoint["line"].as_u64())
    }

    fn is_logpoint_output(&self, body: &Value) -> bool {
        body["output"].as_str().is_some_and(|t| t.contains(MARK))
    }

    fn logpoint_fits(&self, _: &str, _: &str) -> bool {
        false
    }

    /// The template as the adapter takes it (`{expression}` is evaluated by lldb-dap, Delve
    /// and gdb alike), after a mark with its owner.
    fn logpoint_message(&self, id: &str, template: &str, _: bool) -> String {
        format!("{MARK}{id}{MARK}{template}")
    }

    fn logpoint_owner<'t>(&self, text: &'t str) -> Option<(&'t str, &'t str)> {
        let (_, rest) = text.split_once(MARK)?;
        let (id, text) = rest.split_once(MARK)?;
        Some((id, text.trim_end_matches(['\n', '\r'])))
    }

    fn scope_names(&self, scope: &str) -> Result<&'static [&'static str], String> {
        match scope {
            "local" => Ok(&["Locals", "Arguments", "Local variables", "Local"]),
            "global" | "module" => Ok(&["Globals", "Global variables", "Statics", "Static"]),
            "registers" => Ok(&["Registers"]),
            "all" => Ok(&[
                "Locals",
                "Arguments",
                "Local variables",
                "Local",
                "Globals",
                "Global variables",
                "Statics",
                "Static",
            ]),
            _ => Err(format!(
                "{} has no `{scope}` scope: use local, global or registers",
                self.0.name
            )),
        }
    }

    fn scope_kind(&self, name: &str) -> &'static str {
        match name {
            "Globals" | "Global variables" | "Statics" | "Static" => "global",
            "Registers" => "registers",
            _ => "local",
        }
    }

    /// lldb-dap lists registers in groups: the general-purpose ones are listed in their
    /// place, the floating-point and vector sets left out (evaluate `$xmm0` for one).
    fn group(&self, name: &str, in_scope: bool) -> Option<bool> {
        match name {
            "General Purpose Registers" => Some(true),
            // An async fn's own state (`{async_fn_env#0}`, unnamed) and the context it was
            // polled with: the compiler's, not the program's.
            "<null>" | "_task_context" if in_scope => Some(false),
            "Advanced Vector Extensions" => Some(false),
            _ if name.ends_with(" Registers") => Some(false),
            _ => None,
        }
    }

    fn value(&self, kind: &str, text: &str) -> Value {
        match values::rust_u8(kind, text).filter(|_| self.0.language == "rust") {
            Some(number) => number.into(),
            None => typed_text(kind, text),
        }
    }

    fn local_name<'n>(&self, name: &'n str) -> &'n str {
        match name.rsplit_once(" @ ") {
            Some((name, place))
                if place.rsplit_once(':').is_some_and(|(_, line)| line.parse::<u32>().is_ok()) =>
            {
                name
            }
            _ => name,
        }
    }

    /// A number, a boolean or a quoted string says the whole value (rdbg lists a `Float`'s
    /// class as a member; lldb a `char *`'s characters).
    fn opaque(&self, kind: &str, text: &str) -> Option<crate::dap::flavour::Opaque> {
        values::opaque(kind, text)
    }

    fn summary_only(&self, kind: &str, text: &str) -> bool {
        typed_text(kind, text).is_string() && !(text.ends_with('"') || text.ends_with('\''))
    }

    /// The C runtime's and Go's start-up under `main`, Rust's `lang_start` and Zig's `start`.
    fn is_startup_frame(&self, frame: &Value) -> bool {
        let name = frame["name"].as_str().unwrap_or_default();
        let path = frame.pointer("/source/path").and_then(Value::as_str);
        // libc's frames name its own build tree (`csu/libc-start.c`), not a file here.
        path.is_none_or(|p| !p.starts_with('/') || self.is_library(p))
            || name.starts_with("__libc_start")
            || name == "_start"
            || name.starts_with("runtime.")
            || name.starts_with("std::rt::")
            || name.starts_with("core::ops::function::")
            || name.starts_with("std::sys::backtrace::")
            || name.starts_with("start.posixCallMainAndExit")
            || name == "start._start"
    }

    fn is_library(&self, path: &str) -> bool {
        // A relative path is a system library's, built elsewhere (glibc's `nptl/pthread_kill.c`,
        // libstdc++'s `../../../../libstdc++-v3/…`): the program's own are absolute.
        !path.starts_with('/')
            || [
                "/usr/include/",
                "/usr/lib/",
                "/rustc/",
                "/.cargo/registry/",
                "/.rustup/",
                "/go/pkg/mod/",
                "/usr/share/go",
            ]
            .iter()
            .any(|p| path.contains(p))
    }

    fn probe(&self, _: &str, _: bool, _: Option<usize>) -> Option<String> {
        None
    }

    fn probe_result<'t>(&self, _: &'t str) -> Option<(bool, &'t str)> {
        None
    }

    fn install_probe(&self) -> &'static str {
        ""
    }

    fn hold(&self, _: &str) -> Option<(String, &'static str)> {
        None
    }

    fn loaded_files(&self) -> Option<&'static str> {
        None
    }

    fn is_helper(&self, _: &str) -> bool {
        false
    }

    /// As named: debug information keeps the path the compiler was given, symlinks and all
    /// (Debian's Go standard library is `/usr/lib/go-1.19/src/…`, a link to `/usr/share/…`;
    /// Delve does not know the resolved one).
    fn breakpoint_path<'p>(&self, named: &'p Path, _: &'p Path) -> &'p Path {
        named
    }

    /// `orders::total::h26ca…` → `orders::total`.
    /// lldb-dap 19 steps by lines whatever the granularity asked: its own command steps one
    /// instruction (and the stop is reported as a step's).
    fn instruction_step(&self, thread: &Value, frame: &Value) -> (&'static str, Value) {
        match self.0.name == "lldb-dap" {
            true => {
                let command = "`thread step-inst-over";
                ("evaluate", json!({"expression": command, "frameId": frame, "context": "repl"}))
            }
            false => ("next", json!({"threadId": thread, "granularity": "instruction"})),
        }
    }

    fn counts_frames(&self) -> bool {
        self.0.name != "delve"
    }

    /// lldb-dap lists no return value: `thread info` says it, as a `$N` it can read; gdb's is
    /// in a `Return` scope.
    fn returned(
        &self,
        frame: &Value,
        ask: &mut dyn FnMut(&str, Value) -> Option<Value>,
    ) -> Option<Value> {
        match self.0.name.as_str() {
            "lldb-dap" => {}
            // Delve's DAP says no function's return value after a step out (measured: 1.20).
            "delve" => return None,
            _ => return crate::dap::flavour::returned_scope(frame, ask),
        }
        let info = json!({"expression": "`thread info", "frameId": frame, "context": "repl"});
        let said = ask("evaluate", info)?;
        let line =
            said["result"].as_str()?.lines().find_map(|l| l.strip_prefix("Return value: "))?;
        // `(int) $0 = 9`
        let name = line.split_whitespace().find(|w| w.starts_with('$'))?;
        let read = json!({"expression": name, "frameId": frame, "context": "watch"});
        let value = ask("evaluate", read)?;
        // A structure's `evaluate` text is its type's name; as a variable it is `{...}`.
        let text = match value["result"] == value["type"] {
            true => "{...}".into(),
            false => value["result"].clone(),
        };
        Some(json!({"value": text, "type": value["type"],
            "variablesReference": value["variablesReference"]}))
    }

    fn evaluation_failed(&self, message: &str) -> String {
        match message.contains("function calls not allowed") {
            // Delve calls a function only from its own command line (`call`), with the
            // goroutine stopped where it can: never in an expression of ours.
            true => "Delve evaluates no function or method call (it calls them only from its \
                     own `call` command): read the fields the method would read instead \
                     (`len(c.items)` for `c.Len()`), or set a probe inside the method"
                .into(),
            false => message.to_string(),
        }
    }

    fn function_name<'n>(&self, name: &'n str) -> std::borrow::Cow<'n, str> {
        demangle::demangled(name)
    }

    /// Delve: `Process 1680 has exited with status 0`.
    fn exit_said(&self, body: &Value) -> Option<i32> {
        let text = body["output"].as_str()?;
        let (_, status) = text.strip_prefix("Process ")?.split_once(" has exited with status ")?;
        status.trim().parse().ok()
    }

    /// Delve builds `go run` and `go test` programs before they start (seconds on a cold
    /// build cache, within the call's `timeout`).
    fn preparing(&self) -> Option<String> {
        let mode = self.0.arguments["mode"].as_str();
        matches!(mode, Some("debug" | "test")).then(|| "building the program (delve)".into())
    }

    /// gdb sends what its breakpoint commands print as `stdout`, one message an event;
    /// lldb-dap its watchpoint reports ("\nWatchpoint 1 hit:\nold value: 0\nnew value: 1\n").
    fn is_adapter_message(&self, text: &str) -> bool {
        match self.0.name.as_str() {
            "gdb" => {
                let breakpoint = text.strip_prefix("Breakpoint ").is_some_and(|rest| {
                    rest.contains(" at 0x") || rest.trim_end().ends_with("pending.")
                });
                breakpoint || text.starts_with("No source file named ")
            }
            "lldb-dap" => text
                .trim_start()
                .strip_prefix("Watchpoint ")
                .is_some_and(|rest| rest.contains(" hit:\nold value: ")),
            _ => false,
        }
    }

    /// A configured adapter on a port or socket we chose runs the program in itself (rdbg).
    fn adapter_is_program(&self) -> bool {
        matches!(self.0.connect, Connect::Tcp(_) | Connect::Unix)
    }

    fn program_text<'t>(&self, text: &'t str) -> Cow<'t, str> {
        match text.contains("\r\n") {
            true => Cow::Owned(text.replace("\r\n", "\n")),
            false => Cow::Borrowed(text),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rust_hashes_leave_function_names() {
        let native = Native(Arc::new(Profile::lldb("lldb-dap", Value::Null)));
        assert_eq!(native.function_name("orders::total::hdc7604ba955b3d93"), "orders::total");
        assert_eq!(native.function_name("main"), "main");
        assert_eq!(
            native.function_name("rt::tests::t::_$u7b$$u7b$closure$u7d$$u7d$::h0123456789abcdef"),
            "rt::tests::t::{{closure}}"
        );
        assert_eq!(
            native.function_name("core::option::Option$LT$T$GT$::and_then::h0123456789abcdef"),
            "core::option::Option<T>::and_then"
        );
        assert_eq!(
            native.function_name("_$LT$$RF$str$u20$as$u20$x..Y$LT$$u27$a$C$$u20$u8$GT$$GT$::f"),
            "<&str as x::Y<'a, u8>>::f"
        );
        let marked = native.logpoint_message("bp1", "x={x}", true);
        assert_eq!(native.logpoint_owner(&format!("> [Go 1]: {marked}\n")), Some(("bp1", "x={x}")));
    }
}
