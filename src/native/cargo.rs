//! `cargo run` and `cargo test`: cargo builds the program (or test binary), then lldb-dap
//! runs what it built. Debugging cargo itself would not reach the program: cargo starts it
//! as a child process.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::debugger::{Code, Failure};
use crate::shell::CommandLine;

/// A command cargo builds a program for: `cargo [+toolchain] run|test ARGS [-- PROGRAM ARGS]`.
pub(super) fn is_cargo(command: &CommandLine) -> bool {
    let name = Path::new(&command.words[0]).file_name().and_then(|n| n.to_str());
    name == Some("cargo") && matches!(verb(command).map(|(v, _)| v), Some("run" | "test"))
}

/// The verb and the index of the words after it.
fn verb(command: &CommandLine) -> Option<(&str, usize)> {
    let at = command.words.iter().skip(1).position(|w| !w.starts_with('+'))? + 1;
    Some((command.words[at].as_str(), at + 1))
}

/// Builds what the command would run and answers its path and the program's arguments (the
/// words after `--`). For `cargo test` with several test binaries, the one built from the
/// crate target whose directory holds `breakpoint_file` (the nearest), else the only one.
pub(super) fn build(
    command: &CommandLine,
    breakpoint_file: Option<&str>,
) -> Result<(String, Vec<String>), Failure> {
    let (verb, rest) = verb(command).expect("checked by is_cargo");
    let words = &command.words[rest..];
    let split = words.iter().position(|w| w == "--").unwrap_or(words.len());
    let (flags, args) = (&words[..split], words.get(split + 1..).unwrap_or_default());
    let mut cargo = std::process::Command::new(&command.words[0]);
    cargo.args(&command.words[1..rest - 1]);
    match verb {
        "run" => cargo.arg("build"),
        _ => cargo.args(["test", "--no-run"]),
    };
    cargo.args(flags).args(["--message-format", "json-render-diagnostics"]);
    if let Some(cwd) = &command.cwd {
        cargo.current_dir(cwd);
    }
    cargo.envs(command.env.iter().map(|(k, v)| (k, v)));
    let output = cargo.stdin(std::process::Stdio::null()).output().map_err(|e| {
        Failure::new(Code::CommandNotFound, format!("cannot run `{}`: {e}", command.words[0]))
    })?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let said = crate::debugger::session::clip(stderr.trim(), 4000);
        return Err(Failure::new(
            Code::LaunchFailed,
            format!("cargo could not build the program: {said}"),
        ));
    }
    let built: Vec<(PathBuf, String)> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|m| m["reason"] == "compiler-artifact")
        .filter_map(|m| {
            let executable = m["executable"].as_str()?.to_string();
            let source = PathBuf::from(m.pointer("/target/src_path")?.as_str()?);
            Some((source, executable))
        })
        .collect();
    let chosen = match built.as_slice() {
        [] => None,
        [(_, only)] => Some(only.clone()),
        many => breakpoint_file.and_then(|file| nearest(many, Path::new(file))),
    };
    let Some(program) = chosen else {
        let names: Vec<&str> = built.iter().map(|(_, e)| e.as_str()).collect();
        return Err(Failure::new(
            Code::InvalidCommand,
            format!(
                "`{}` builds {} programs ({}): run the one to debug directly, or put the \
                 breakpoint in its crate's sources",
                command.words.join(" "),
                built.len(),
                names.join(", ")
            ),
        ));
    };
    Ok((program, args.to_vec()))
}

/// The executable built from `file` itself (an integration test), else the one whose crate
/// target's directory is the nearest above it.
fn nearest(built: &[(PathBuf, String)], file: &Path) -> Option<String> {
    if let Some((_, executable)) = built.iter().find(|(source, _)| source == file) {
        return Some(executable.clone());
    }
    let depth = |(source, _): &&(PathBuf, String)| {
        let dir = source.parent()?;
        file.starts_with(dir).then(|| dir.components().count())
    };
    let best = built.iter().filter_map(|b| Some((depth(&b)?, b))).max_by_key(|(d, _)| *d);
    best.map(|(_, (_, executable))| executable.clone())
}
