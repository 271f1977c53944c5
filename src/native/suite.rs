//! The programs one `debug-script` command runs, each with the adapter that debugs it. Most
//! commands run one. `go test` of several packages (`./...`, or several named) runs each
//! package's test binary, and `cargo test` each test program it builds: every one is debugged
//! in turn (`dap::script::run_each`). With a breakpoint or probes, only the programs that can
//! reach their files run; the others are said in a note.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::debugger::{Code, Failure};
use crate::native::{cargo, go, is_go, lldb, lldb_dap, Binary, Configured, Native};
use crate::shell::CommandLine;

/// One program of a command: the command that runs it alone (for answers), and its adapter.
pub(crate) struct Program {
    pub(crate) command: CommandLine,
    pub(crate) native: Native,
}

/// The programs a command runs, in order, and what the answer says of those left out.
pub(crate) struct Suite {
    pub(crate) programs: Vec<Program>,
    pub(crate) notes: Vec<String>,
    /// The programs after one that fails are not run (`cargo test`, unless `--no-fail-fast`),
    /// this said why.
    pub(crate) fail_fast: Option<&'static str>,
    /// Binaries built for the programs ahead, removed once they ran.
    pub(crate) built: Option<Built>,
}

impl Native {
    /// The programs `command` runs ([`Suite`]), `files` the breakpoint's and probes'.
    pub(crate) fn suite(
        command: &CommandLine,
        language: Option<&str>,
        files: &[&str],
    ) -> Result<Suite, Failure> {
        let configured = Configured::load(command.cwd.as_deref()).ok().flatten();
        let claimed =
            configured.as_ref().is_some_and(|c| c.find(command, language, files).is_some());
        if !claimed && is_go(command) && matches!(language, None | Some("go")) {
            let go =
                go::read(&command.words[1..]).map_err(|w| Failure::new(Code::InvalidCommand, w))?;
            if go.several() {
                return go_packages(command, &go, files);
            }
        }
        let rust = matches!(language, None | Some("rust"));
        if !claimed && rust && cargo::is_cargo(command) && command.words.iter().any(|w| w == "test")
        {
            if let Some(adapter) = lldb_dap() {
                return cargo_programs(command, adapter, language, files);
            }
        }
        let native = Native::resolve(command, language, files, true)?;
        let programs = vec![Program { command: command.clone(), native }];
        Ok(Suite { programs, notes: Vec::new(), fail_fast: None, built: None })
    }
}

/// The files as absolute paths, against the command's directory.
fn absolute(command: &CommandLine, files: &[&str]) -> Vec<PathBuf> {
    let cwd = command.dir();
    files.iter().map(|f| cwd.join(f)).collect()
}

/// Says which programs were left out for not reaching the files.
fn left_out(labels: &[String], files: &[PathBuf]) -> Option<String> {
    let files: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    (!labels.is_empty()).then(|| {
        format!(
            "Not run: {} (no code of theirs can reach {}).",
            labels.iter().map(|l| format!("`{l}`")).collect::<Vec<_>>().join(", "),
            files.join(", ")
        )
    })
}

/// `go test` of several packages: one Delve run per package with test files, in `go test`'s
/// order, those whose test binary links a file's package only.
fn go_packages(
    command: &CommandLine,
    go: &go::GoCommand,
    files: &[&str],
) -> Result<Suite, Failure> {
    let cwd = command.dir();
    let packages = go::list(&go.packages, &go.build_flags, &cwd, &command.env)
        .map_err(|why| Failure::new(Code::InvalidCommand, why))?;
    let files = absolute(command, files);
    // Each file's package's import path (a package outside those listed is asked for).
    let of_files: Vec<(PathBuf, Option<String>)> = files
        .iter()
        .map(|file| {
            let dir = file.parent().unwrap_or(Path::new("/"));
            let listed = packages.iter().find(|p| p.dir == dir).map(|p| p.import_path.clone());
            (file.clone(), listed.or_else(|| go::import_path(dir, &command.env)))
        })
        .collect();
    let mut labels = Vec::new();
    let mut unreached = Vec::new();
    for package in packages.iter().filter(|p| p.tests) {
        let relative = match package.dir.strip_prefix(&cwd) {
            Ok(rest) if rest.as_os_str().is_empty() => ".".to_string(),
            Ok(rest) => format!("./{}", rest.display()),
            Err(_) => package.import_path.clone(),
        };
        let label = CommandLine { words: go.for_package(&relative), ..command.clone() };
        let reaches = of_files.iter().any(|(file, path)| package.reaches(file, path.as_deref()));
        if !files.is_empty() && !reaches {
            unreached.push(label.words.join(" "));
            continue;
        }
        labels.push((label, package.dir.clone()));
    }
    // Every package's test binary built at once, as `go test` builds them (Delve would build
    // each in turn, as it starts): Delve then runs each as it is.
    let built = Built::for_packages(&labels, go, command);
    let mut programs = Vec::new();
    for ((label, dir), binary) in labels.into_iter().zip(built.binaries()) {
        let profile = super::delve_built(command, Some(&dir), true, binary.as_deref())?;
        programs.push(Program { command: label, native: Native(Arc::new(profile)) });
    }
    let words = command.words.join(" ");
    if programs.is_empty() {
        let why = match unreached.is_empty() {
            true => format!("no package that `{words}` names has test files"),
            false => format!(
                "no package's tests that `{words}` names can reach {}: name its package",
                files.iter().map(|f| f.display().to_string()).collect::<Vec<_>>().join(", ")
            ),
        };
        return Err(Failure::new(Code::InvalidCommand, why));
    }
    let notes = left_out(&unreached, &files).into_iter().collect();
    Ok(Suite { programs, notes, fail_fast: None, built: Some(built) })
}

/// Test binaries built ahead in a private directory, removed with it.
pub(crate) struct Built {
    dir: Option<PathBuf>,
    binaries: Vec<Option<PathBuf>>,
}

impl Built {
    fn for_packages(
        packages: &[(CommandLine, PathBuf)],
        go: &go::GoCommand,
        command: &CommandLine,
    ) -> Built {
        // A command's own `-gcflags` would be overridden: Delve builds those.
        let own_gcflags = go.build_flags.iter().any(|f| f.starts_with("-gcflags"));
        let dir = match crate::scratch::private_dir("gotest") {
            Ok(dir) if packages.len() > 1 && !own_gcflags => dir,
            _ => return Built { dir: None, binaries: vec![None; packages.len()] },
        };
        let dirs: Vec<&Path> = packages.iter().map(|(_, dir)| dir.as_path()).collect();
        let binaries = go::build_tests(&dirs, &go.build_flags, &command.env, &dir);
        Built { dir: Some(dir), binaries }
    }

    fn binaries(&self) -> Vec<Option<PathBuf>> {
        self.binaries.clone()
    }
}

impl Drop for Built {
    fn drop(&mut self) {
        if let Some(dir) = &self.dir {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// `cargo test`: every test program it builds, in cargo's order, under lldb-dap; those whose
/// code can reach a file only. Doc tests are said to be left out.
fn cargo_programs(
    command: &CommandLine,
    adapter: String,
    language: Option<&str>,
    files: &[&str],
) -> Result<Suite, Failure> {
    let built = cargo::build(command)?;
    let paths = absolute(command, files);
    let mut programs = Vec::new();
    let mut unreached = Vec::new();
    for program in &built.built {
        let mut words: Vec<String> = program.label().split(' ').map(String::from).collect();
        if !built.args.is_empty() {
            words.push("--".into());
            words.extend(built.args.iter().cloned());
        }
        let label = CommandLine { words, ..command.clone() };
        if !paths.is_empty() && !paths.iter().any(|f| program.reaches(f, &built.built)) {
            unreached.push(label.words.join(" "));
            continue;
        }
        let run = Some((program.executable.clone(), built.args.clone()));
        let language = language.map(String::from);
        let profile = lldb(command, adapter.clone(), language, files, Some(Binary::Rust), run)?;
        programs.push(Program { command: label, native: Native(Arc::new(profile)) });
    }
    let mut notes: Vec<String> = left_out(&unreached, &paths).into_iter().collect();
    if built.doc_tests {
        notes.push(
            "Not run: the doc tests (rustdoc builds each apart as it runs them, outside the \
             debugger); `cargo test --doc` runs them."
                .into(),
        );
    }
    if programs.is_empty() {
        return Err(Failure::new(
            Code::InvalidCommand,
            format!(
                "no test program `{}` builds can reach {}",
                command.words.join(" "),
                paths.iter().map(|f| f.display().to_string()).collect::<Vec<_>>().join(", ")
            ),
        ));
    }
    // As cargo does: a failing test program ends the run.
    let fail_fast = (!command.words.iter().any(|w| w == "--no-fail-fast")).then_some(
        "cargo test stops at the first test program that fails; `--no-fail-fast` runs them all",
    );
    Ok(Suite { programs, notes, fail_fast, built: None })
}
