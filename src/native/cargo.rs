//! `cargo run` and `cargo test`: cargo builds the program (or the test programs), then
//! lldb-dap runs what it built. Debugging cargo itself would not reach the program: cargo starts
//! it as a child process.
//!
//! `cargo test` builds a test program per crate target (the library's unit tests, each
//! binary's, each `tests/*.rs`), and runs each in turn, then the doc tests; `debug-script` runs
//! each under the debugger the same way (`native::suite`), the doc tests aside (rustdoc builds
//! each apart, at run time).

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

/// `cargo test` options that take a value (`cargo test --help`): the word after them is theirs,
/// not a test name.
const VALUED: &[&str] = &[
    "-p",
    "--package",
    "--exclude",
    "-j",
    "--jobs",
    "-F",
    "--features",
    "--target",
    "--target-dir",
    "--manifest-path",
    "--message-format",
    "--color",
    "--config",
    "-Z",
    "--profile",
    "--bin",
    "--example",
    "--test",
    "--bench",
    "--lockfile-path",
];

/// Options that pick which targets `cargo test` builds: with none, it runs the doc tests too.
const TARGETS: &[&str] = &[
    "--lib",
    "--bin",
    "--bins",
    "--test",
    "--tests",
    "--bench",
    "--benches",
    "--example",
    "--examples",
    "--all-targets",
];

/// A program cargo built: a test program of `cargo test`, or `cargo run`'s binary.
#[derive(Debug, Clone)]
pub(super) struct Built {
    pub(super) executable: String,
    /// The crate target's root source file (`src/lib.rs`, `tests/api.rs`).
    pub(super) source: PathBuf,
    /// The target's kind: `lib`, `bin`, `test`, `bench`, `example`.
    pub(super) kind: String,
    pub(super) name: String,
    /// The directory of its package's library root, when it has one.
    pub(super) lib_dir: Option<PathBuf>,
}

impl Built {
    /// Whether its code may run `file`: under its target's root directory, or in its
    /// package's library (which an integration test, a bench or an example links). A target's
    /// own root file (`tests/api.rs`) is that target's alone.
    pub(super) fn reaches(&self, file: &Path, all: &[Built]) -> bool {
        if all.iter().any(|b| b.source == file && b.kind != "lib") {
            return self.source == file;
        }
        let under = |dir: Option<&Path>| dir.is_some_and(|d| file.starts_with(d));
        let links_lib = matches!(self.kind.as_str(), "test" | "bench" | "example");
        under(self.source.parent()) || (links_lib && under(self.lib_dir.as_deref()))
    }

    /// The `cargo test` command that runs this program alone (for answers).
    pub(super) fn label(&self) -> String {
        match self.kind.as_str() {
            "lib" => "cargo test --lib".to_string(),
            kind => format!("cargo test --{kind} {}", self.name),
        }
    }
}

/// What `cargo test` (or `cargo run`) built: its programs, the arguments each is given (a test
/// name before `--`, then the words after it), and whether `cargo test` would also have run
/// doc tests.
pub(super) struct Programs {
    pub(super) built: Vec<Built>,
    pub(super) args: Vec<String>,
    pub(super) doc_tests: bool,
}

/// Builds what the command would run: `cargo run`'s binary, or every test program of `cargo
/// test` (in the order cargo runs them).
pub(super) fn build(command: &CommandLine) -> Result<Programs, Failure> {
    let (verb, rest) = verb(command).expect("checked by is_cargo");
    let words = &command.words[rest..];
    let split = words.iter().position(|w| w == "--").unwrap_or(words.len());
    let (flags, after) = (&words[..split], words.get(split + 1..).unwrap_or_default());
    // `cargo test NAME`: the name filters each test program's tests; cargo passes it on.
    let mut cargo_flags: Vec<&String> = Vec::new();
    let mut args: Vec<String> = Vec::new();
    let mut words = flags.iter();
    while let Some(word) = words.next() {
        if verb == "test" && !word.starts_with('-') {
            args.push(word.clone());
            continue;
        }
        cargo_flags.push(word);
        if VALUED.contains(&word.as_str()) {
            cargo_flags.extend(words.next());
        }
    }
    if verb == "test" && flags.iter().any(|w| w == "--doc") {
        return Err(Failure::new(
            Code::InvalidCommand,
            "`cargo test --doc` runs doc tests, which rustdoc builds and runs apart: they cannot \
             run under the debugger; debug the test programs (`cargo test --lib`, `--tests`)",
        ));
    }
    args.extend(after.iter().cloned());
    let mut cargo = std::process::Command::new(&command.words[0]);
    cargo.args(&command.words[1..rest - 1]);
    match verb {
        "run" => cargo.arg("build"),
        _ => cargo.args(["test", "--no-run"]),
    };
    cargo.args(cargo_flags).args(["--message-format", "json-render-diagnostics"]);
    if let Some(cwd) = &command.cwd {
        cargo.current_dir(cwd);
    }
    cargo.envs(command.env.iter().map(|(k, v)| (k, v)));
    let output = crate::process::output_of(&mut cargo).map_err(|e| {
        Failure::new(Code::CommandNotFound, format!("cannot run `{}`: {e}", command.words[0]))
    })?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let said = crate::debugger::limits::clip(stderr.trim(), 4000);
        return Err(Failure::new(
            Code::LaunchFailed,
            format!("cargo could not build the program: {said}"),
        ));
    }
    let messages: Vec<Value> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|m| m["reason"] == "compiler-artifact")
        .collect();
    let target = |m: &Value, key: &str| m.pointer(&format!("/target/{key}")).cloned();
    let lib_dir = |package: &Value| {
        messages.iter().find_map(|m| {
            let lib = target(m, "kind")?.as_array()?.iter().any(|k| k == "lib" || k == "rlib");
            let src = target(m, "src_path")?;
            (lib && &m["package_id"] == package)
                .then(|| {
                    PathBuf::from(src.as_str().unwrap_or_default()).parent().map(PathBuf::from)
                })
                .flatten()
        })
    };
    // `cargo run` runs the binary; `cargo test` the test programs (not a binary an
    // integration test needs built beside them).
    let wanted =
        |m: &Value| verb == "run" || m.pointer("/profile/test") == Some(&Value::Bool(true));
    let mut doc_tests = false;
    let mut built: Vec<Built> = messages
        .iter()
        .filter(|m| wanted(m))
        .filter_map(|m| {
            let executable = m["executable"].as_str()?.to_string();
            let kind = target(m, "kind")?.as_array()?.first()?.as_str()?.to_string();
            Some(Built {
                executable,
                source: PathBuf::from(target(m, "src_path")?.as_str()?),
                kind,
                name: target(m, "name")?.as_str()?.to_string(),
                lib_dir: lib_dir(&m["package_id"]),
            })
        })
        .collect();
    // The order cargo runs them in: the library's unit tests, the binaries', then the
    // integration tests, examples and benches, each kind by name.
    let rank =
        |kind: &str| ["lib", "bin", "test", "example", "bench"].iter().position(|k| *k == kind);
    built.sort_by(|a, b| (rank(&a.kind), &a.name).cmp(&(rank(&b.kind), &b.name)));
    if verb == "test" && !flags.iter().any(|w| TARGETS.contains(&w.as_str())) {
        doc_tests = messages.iter().any(|m| {
            m.pointer("/target/doctest") == Some(&Value::Bool(true))
                && m.pointer("/profile/test") == Some(&Value::Bool(false))
        });
    }
    if built.is_empty() {
        return Err(Failure::new(
            Code::InvalidCommand,
            format!("`{}` builds no program to run", command.words.join(" ")),
        ));
    }
    Ok(Programs { built, args, doc_tests })
}

/// `cargo run`'s one program; for a run that builds several, the one whose crate target holds
/// `file` (the nearest), else a failure that names them.
pub(super) fn one(
    command: &CommandLine,
    programs: &Programs,
    file: Option<&str>,
) -> Result<String, Failure> {
    let built = &programs.built;
    let chosen = match built.as_slice() {
        [only] => Some(only.executable.clone()),
        many => file.and_then(|file| nearest(many, Path::new(file))),
    };
    chosen.ok_or_else(|| {
        let names: Vec<&str> = built.iter().map(|b| b.executable.as_str()).collect();
        Failure::new(
            Code::InvalidCommand,
            format!(
                "`{}` builds {} programs ({}): run the one to debug directly, or put the \
                 breakpoint in its crate's sources",
                command.words.join(" "),
                built.len(),
                names.join(", ")
            ),
        )
    })
}

/// The executable built from `file` itself (an integration test), else the one whose crate
/// target's directory is the nearest above it.
fn nearest(built: &[Built], file: &Path) -> Option<String> {
    if let Some(b) = built.iter().find(|b| b.source == file) {
        return Some(b.executable.clone());
    }
    let depth = |b: &&Built| {
        let dir = b.source.parent()?;
        file.starts_with(dir).then(|| dir.components().count())
    };
    let best = built.iter().filter_map(|b| Some((depth(&b)?, b))).max_by_key(|(d, _)| *d);
    best.map(|(_, b)| b.executable.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn built(kind: &str, name: &str, source: &str) -> Built {
        Built {
            executable: format!("/t/{name}"),
            source: source.into(),
            kind: kind.into(),
            name: name.into(),
            lib_dir: Some("/c/src".into()),
        }
    }

    #[test]
    fn which_test_programs_reach_a_file() {
        let all = [
            built("lib", "c", "/c/src/lib.rs"),
            built("bin", "tool", "/c/src/bin/tool.rs"),
            built("test", "api", "/c/tests/api.rs"),
            built("test", "cli", "/c/tests/cli.rs"),
        ];
        let reach = |file: &str| -> Vec<&str> {
            all.iter()
                .filter(|b| b.reaches(Path::new(file), &all))
                .map(|b| b.name.as_str())
                .collect()
        };
        assert_eq!(reach("/c/src/parse.rs"), ["c", "api", "cli"]);
        assert_eq!(reach("/c/src/bin/tool.rs"), ["tool"]);
        assert_eq!(reach("/c/tests/api.rs"), ["api"]);
        // A module the tests share (`mod common;`): each may.
        assert_eq!(reach("/c/tests/common/mod.rs"), ["api", "cli"]);
        assert_eq!(all[2].label(), "cargo test --test api");
        assert_eq!(all[0].label(), "cargo test --lib");
    }
}
