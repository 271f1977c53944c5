//! `go run` and `go test` as people write them, read into what Delve's `launch` takes: the
//! package (or file) to build, the build flags (`-tags x`, `-race`, `-gcflags '…'`), and the
//! arguments of the program or of the test binary (`-run TestX -v` become `-test.run=TestX
//! -test.v`, as `go test` passes them on).
//!
//! Go's flags take their value as the next word as well as after `=`; reading `-run TestX` as
//! a flag `-run` and a package `TestX` built the wrong thing. The flags known here are those
//! `go help build` and `go help testflag` list.

/// `go run` or `go test`, read.
#[derive(Debug, PartialEq)]
pub(super) struct GoCommand {
    /// Delve's mode: `debug` (go run) or `test`.
    pub(super) mode: &'static str,
    /// The packages' directories or patterns (`./...`), or the one `.go` file, as written
    /// (relative to `cwd`); `go run` names one.
    pub(super) packages: Vec<String>,
    pub(super) build_flags: Vec<String>,
    /// The program's arguments, or the test binary's.
    pub(super) args: Vec<String>,
    /// The words after `go` but the packages, as written (for a package's own command).
    pub(super) others: Vec<String>,
}

impl GoCommand {
    /// The one package Delve builds, for a session or a single run; several are refused with
    /// what to do.
    pub(super) fn package(&self) -> Result<&str, String> {
        match self.packages.as_slice() {
            [one] if !is_pattern(one) => Ok(one),
            [one] => Err(format!(
                "a session debugs one package at a time, and `{one}` means several: name the one \
                 that holds the breakpoint (debug-script runs them all)"
            )),
            more => Err(format!(
                "a session debugs the tests of one package at a time, and `go test {}` names \
                 several: name the one that holds the breakpoint (debug-script runs them all)",
                more.join(" ")
            )),
        }
    }

    /// Whether the command may run several packages' tests.
    pub(super) fn several(&self) -> bool {
        self.mode == "test"
            && (self.packages.len() > 1 || self.packages.iter().any(|p| is_pattern(p)))
    }

    /// The test binary's arguments with those `go test` adds itself: `-test.paniconexit0`,
    /// and `-test.timeout=10m0s` unless a timeout is given (a test that waits forever is then
    /// a hang, not the runtime's deadlock crash).
    pub(super) fn with_defaults(self) -> Vec<String> {
        if self.mode != "test" {
            return self.args;
        }
        let mut args = vec!["-test.paniconexit0".to_string()];
        if !self.args.iter().any(|a| a.starts_with("-test.timeout=")) {
            args.push("-test.timeout=10m0s".into());
        }
        args.extend(self.args);
        args
    }

    /// `go test` of one package as written: the other words kept, the packages replaced.
    pub(super) fn for_package(&self, package: &str) -> Vec<String> {
        let mut words = vec!["go".to_string()];
        words.extend(self.others.iter().cloned());
        words.push(package.to_string());
        words
    }
}

/// Whether a package argument means several packages (`./...`, `example.com/x/...`).
fn is_pattern(package: &str) -> bool {
    package.contains("...")
}

/// A package `go test` would run, as `go list` says.
#[derive(Debug)]
pub(super) struct Package {
    pub(super) import_path: String,
    pub(super) dir: std::path::PathBuf,
    /// It has test files (`go test` says `[no test files]` of one without).
    pub(super) tests: bool,
    /// The import paths its test binary links (`go list -test`'s `P.test` entry).
    pub(super) links: Vec<String>,
}

impl Package {
    /// Whether its test binary may run `file`: a file of its own package, or (not a test
    /// file) one of a package it links.
    pub(super) fn reaches(&self, file: &std::path::Path, of_file: Option<&str>) -> bool {
        let dir = file.parent();
        if dir == Some(self.dir.as_path()) {
            return true;
        }
        let test_file = file.to_str().is_some_and(|f| f.ends_with("_test.go"));
        match of_file {
            Some(path) if !test_file => self.links.iter().any(|l| l == path),
            // A package outside those listed, and unknown: it may be any's.
            None if !test_file => true,
            _ => false,
        }
    }
}

/// The packages `patterns` name (`go list` in `cwd`, with the build flags that change what
/// builds: `-tags`), in `go test`'s order.
pub(super) fn list(
    patterns: &[String],
    build_flags: &[String],
    cwd: &std::path::Path,
    env: &[(String, String)],
) -> Result<Vec<Package>, String> {
    let format = "{{.ImportPath}}\t{{.Dir}}\t{{len .TestGoFiles}}\t{{len .XTestGoFiles}}\t{{join .Deps \" \"}}";
    let mut go = std::process::Command::new("go");
    go.args(["list", "-test", "-e", "-f", format])
        .args(build_flags.iter().filter(|f| f.starts_with("-tags")))
        .args(patterns)
        .current_dir(cwd)
        .envs(env.iter().map(|(k, v)| (k, v)));
    let output =
        crate::process::output_of(&mut go).map_err(|e| format!("cannot run `go list`: {e}"))?;
    if !output.status.success() {
        let said = String::from_utf8_lossy(&output.stderr);
        return Err(format!("`go list {}` failed: {}", patterns.join(" "), said.trim()));
    }
    let mut packages: Vec<Package> = Vec::new();
    let mut links: Vec<(String, Vec<String>)> = Vec::new();
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let fields: Vec<&str> = line.split('\t').collect();
        let [path, dir, tests, xtests, deps] = fields[..] else { continue };
        let deps = deps.split(' ').map(|d| d.split(" [").next().unwrap_or(d).to_string());
        match path.strip_suffix(".test") {
            // The test binary's main package: what it links.
            Some(package) if !path.contains(' ') => {
                links.push((package.to_string(), deps.collect()))
            }
            // A package's test variants (`p [p.test]`, `p_test [p.test]`).
            _ if path.contains(' ') => {}
            _ => packages.push(Package {
                import_path: path.to_string(),
                dir: dir.into(),
                tests: tests != "0" || xtests != "0",
                links: Vec::new(),
            }),
        }
    }
    for (path, deps) in links {
        if let Some(package) = packages.iter_mut().find(|p| p.import_path == path) {
            package.links = deps;
        }
    }
    Ok(packages)
}

/// The import path of the package in `dir`, when it is not among those listed.
pub(super) fn import_path(dir: &std::path::Path, env: &[(String, String)]) -> Option<String> {
    let mut go = std::process::Command::new("go");
    go.args(["list", "-f", "{{.ImportPath}}", "."])
        .current_dir(dir)
        .envs(env.iter().map(|(k, v)| (k, v)));
    let output = crate::process::output_of(&mut go).ok()?;
    let path = String::from_utf8_lossy(&output.stdout).trim().to_string();
    (output.status.success() && !path.is_empty()).then_some(path)
}

/// Build flags that take a value (`go help build`).
const BUILD_VALUE: &[&str] = &[
    "p",
    "asmflags",
    "buildmode",
    "buildvcs",
    "compiler",
    "gccgoflags",
    "gcflags",
    "installsuffix",
    "ldflags",
    "mod",
    "modfile",
    "overlay",
    "pgo",
    "pkgdir",
    "tags",
    "toolexec",
    "covermode",
    "coverpkg",
    "o",
    "C",
];
/// Build flags alone.
const BUILD_BOOL: &[&str] = &[
    "a",
    "n",
    "race",
    "msan",
    "asan",
    "cover",
    "work",
    "x",
    "linkshared",
    "modcacherw",
    "trimpath",
];
/// Test flags that take a value (`go help testflag`), passed to the test binary.
const TEST_VALUE: &[&str] = &[
    "run",
    "skip",
    "count",
    "timeout",
    "bench",
    "benchtime",
    "cpu",
    "parallel",
    "list",
    "coverprofile",
    "cpuprofile",
    "memprofile",
    "memprofilerate",
    "blockprofile",
    "blockprofilerate",
    "mutexprofile",
    "mutexprofilefraction",
    "trace",
    "outputdir",
    "shuffle",
    "fuzz",
    "fuzztime",
    "fuzzminimizetime",
];
/// Test flags alone.
const TEST_BOOL: &[&str] = &["v", "short", "failfast", "benchmem", "fullpath"];

/// Reads `go run|test …`, the words after `go`.
pub(super) fn read(words: &[String]) -> Result<GoCommand, String> {
    let verb = words.first().map(String::as_str).unwrap_or_default();
    let test = match verb {
        "run" => false,
        "test" => true,
        _ => {
            return Err(format!(
                "`go {verb}` does not run a program: give `go run PKG args`, `go test [PKG] \
                 [flags]` or a built binary"
            ))
        }
    };
    let mut build_flags = Vec::new();
    let mut args = Vec::new();
    let mut packages: Vec<String> = Vec::new();
    // Which words are packages, by index, to write a package's own command.
    let mut package_words: Vec<usize> = Vec::new();
    let all = words;
    let mut words = words[1..].iter();
    while let Some(word) = words.next() {
        let at = all.len() - words.len() - 1;
        // `go run`: the words after the package (or its files) are the program's.
        let another_file = word.ends_with(".go") && all_files(&packages);
        if !test && !packages.is_empty() && !another_file {
            args.push(word.clone());
            args.extend(words.by_ref().cloned());
            break;
        }
        if test && word == "-args" {
            args.extend(words.by_ref().cloned());
            break;
        }
        let Some(flag) = word.strip_prefix("--").or_else(|| word.strip_prefix('-')) else {
            packages.push(word.clone());
            package_words.push(at);
            continue;
        };
        if flag.is_empty() {
            packages.push(word.clone());
            package_words.push(at);
            continue;
        }
        let (name, inline) = match flag.split_once('=') {
            Some((name, value)) => (name, Some(value.to_string())),
            None => (flag, None),
        };
        let mut value = || {
            inline
                .clone()
                .or_else(|| words.next().cloned())
                .ok_or_else(|| format!("`-{name}` needs a value"))
        };
        if BUILD_VALUE.contains(&name) {
            if name == "C" || name == "o" {
                return Err(format!(
                    "`go {verb} -{name}` is not supported: give the directory as the tool's \
                     `cwd` and let debug-mcp build the program"
                ));
            }
            build_flags.push(format!("-{name}={}", value()?));
        } else if BUILD_BOOL.contains(&name) || (!test && name == "v") {
            build_flags.push(word.clone());
        } else if test && TEST_VALUE.contains(&name) {
            args.push(format!("-test.{name}={}", value()?));
        } else if test && (TEST_BOOL.contains(&name) || name == "json") {
            if name == "json" {
                return Err("`go test -json` is not supported: its output is for tools, and \
                            debug-mcp reads the test's own"
                    .into());
            }
            args.push(format!(
                "-test.{name}{}",
                inline.map(|v| format!("={v}")).unwrap_or_default()
            ));
        } else if test && name == "c" {
            return Err("`go test -c` only builds the test binary: leave `-c` out".into());
        } else if test {
            // A flag the test itself defines: the test binary's, as written.
            args.push(word.clone());
        } else {
            return Err(format!(
                "`go run` does not know the flag `{word}`: put the program's own flags after \
                 its package (`go run . {word}`)"
            ));
        }
    }
    if packages.is_empty() {
        match test {
            true => packages.push(".".to_string()),
            false => return Err("`go run` names no package: e.g. `go run .`".into()),
        }
    }
    if !test && packages.len() > 1 {
        return Err(format!(
            "`go run` of several files ({}) is not supported by Delve: run their package \
             (`go run .`)",
            packages.join(" ")
        ));
    }
    if !test && is_pattern(&packages[0]) {
        return Err(format!("`go run` runs one package, and `{}` means several", packages[0]));
    }
    let others = (0..all.len()).filter(|i| !package_words.contains(i)).map(|i| all[i].clone());
    let others = others.collect();
    let mode = if test { "test" } else { "debug" };
    Ok(GoCommand { mode, packages, build_flags, args, others })
}

fn all_files(words: &[String]) -> bool {
    words.iter().all(|w| w.ends_with(".go"))
}

/// Each package's test binary, built as Delve would build it (`-gcflags all=-N -l`, the
/// command's build flags) at once, as `go test` builds them, into `dir`: by package, the binary,
/// or `None` where the build failed (Delve then builds it, and says why it cannot).
pub(super) fn build_tests(
    packages: &[&std::path::Path],
    build_flags: &[String],
    env: &[(String, String)],
    dir: &std::path::Path,
) -> Vec<Option<std::path::PathBuf>> {
    std::thread::scope(|scope| {
        let builds: Vec<_> = packages
            .iter()
            .enumerate()
            .map(|(i, package)| {
                let binary = dir.join(format!("{i}.test"));
                scope.spawn(move || {
                    let mut go = std::process::Command::new("go");
                    go.args(["test", "-c", "-gcflags=all=-N -l", "-o"])
                        .arg(&binary)
                        .args(build_flags)
                        .arg(".")
                        .current_dir(package)
                        .envs(env.iter().map(|(k, v)| (k, v)));
                    let built = crate::process::output_of(&mut go);
                    built
                        .is_ok_and(|o| o.status.success())
                        .then_some(binary)
                        .filter(|b| b.is_file())
                })
            })
            .collect();
        builds.into_iter().map(|b| b.join().ok().flatten()).collect()
    })
}

/// Build flags as Delve 1.20 takes them: one string, a value with spaces in single quotes.
pub(super) fn join_build_flags(flags: &[String]) -> String {
    let quoted: Vec<String> = flags
        .iter()
        .map(|flag| match flag.split_once('=') {
            Some((name, value)) if value.contains(' ') => format!("{name}='{value}'"),
            _ => flag.clone(),
        })
        .collect();
    quoted.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(line: &str, expected: &str) {
        let words: Vec<String> = crate::shell::split(line).unwrap().words;
        assert_eq!(words[0], "go");
        let got = match read(&words[1..]) {
            Ok(GoCommand { mode, packages, build_flags, args, .. }) => {
                format!("{mode} {} build{build_flags:?} args{args:?}", packages.join(" "))
            }
            Err(e) => format!("error: {}", e.split(':').next().unwrap_or_default()),
        };
        assert_eq!(got, expected, "{line}");
    }

    #[test]
    fn reads_go_commands_as_go_does() {
        check("go run .", r#"debug . build[] args[]"#);
        check("go run . -v x", r#"debug . build[] args["-v", "x"]"#);
        check(
            "go run -race -tags dev ./cmd/app --port 0",
            r#"debug ./cmd/app build["-race", "-tags=dev"] args["--port", "0"]"#,
        );
        check("go run main.go a", r#"debug main.go build[] args["a"]"#);
        check("go run -gcflags 'all=-N -l' .", r#"debug . build["-gcflags=all=-N -l"] args[]"#);
        check("go test", r#"test . build[] args[]"#);
        check(
            "go test -run TestAverage -v .",
            r#"test . build[] args["-test.run=TestAverage", "-test.v"]"#,
        );
        check(
            "go test . -run=TestX -count 1",
            r#"test . build[] args["-test.run=TestX", "-test.count=1"]"#,
        );
        check(
            "go test -tags=integration -race ./pkg -timeout 30s",
            r#"test ./pkg build["-tags=integration", "-race"] args["-test.timeout=30s"]"#,
        );
        check("go test -v -args -custom x", r#"test . build[] args["-test.v", "-custom", "x"]"#);
        check("go test . -update", r#"test . build[] args["-update"]"#);
        check("go test --run TestX", r#"test . build[] args["-test.run=TestX"]"#);
        check("go build .", "error: `go build` does not run a program");
        check("go test ./...", r#"test ./... build[] args[]"#);
        check("go test -run . ./a ./b", r#"test ./a ./b build[] args["-test.run=."]"#);
        check("go run ./...", "error: `go run` runs one package, and `./...` means several");
        check(
            "go run a.go b.go",
            "error: `go run` of several files (a.go b.go) is not supported by Delve",
        );
        check("go test -run", "error: `-run` needs a value");
        check("go run -C x .", "error: `go run -C` is not supported");
        check("go test -c", "error: `go test -c` only builds the test binary");
        check("go run -bogus .", "error: `go run` does not know the flag `-bogus`");
        check("go run", "error: `go run` names no package");
    }

    #[test]
    fn a_run_of_tests_gets_go_tests_own_flags() {
        let args = |line: &str| {
            let words: Vec<String> = crate::shell::split(line).unwrap().words;
            read(&words[1..]).unwrap().with_defaults().join(" ")
        };
        assert_eq!(
            args("go test -run X -v"),
            "-test.paniconexit0 -test.timeout=10m0s -test.run=X -test.v"
        );
        assert_eq!(args("go test -timeout 2s"), "-test.paniconexit0 -test.timeout=2s");
        assert_eq!(args("go run . -timeout 2s"), "-timeout 2s");
    }

    #[test]
    fn a_package_of_several_keeps_the_command_as_written() {
        let words: Vec<String> =
            crate::shell::split("go test -run . -v ./... -count 1").unwrap().words;
        let go = read(&words[1..]).unwrap();
        assert!(go.several());
        assert_eq!(go.for_package("./text").join(" "), "go test -run . -v -count 1 ./text");
        assert_eq!(
            go.package().unwrap_err().split(':').next(),
            Some("a session debugs one package at a time, and `./...` means several")
        );
    }

    #[test]
    fn quotes_build_flags_for_delve() {
        let flags =
            ["-race".to_string(), "-gcflags=all=-N -l".to_string(), "-tags=a,b".to_string()];
        assert_eq!(join_build_flags(&flags), "-race -gcflags='all=-N -l' -tags=a,b");
    }
}
