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
    /// The package's directory, or the one `.go` file, as written (relative to `cwd`).
    pub(super) package: String,
    pub(super) build_flags: Vec<String>,
    /// The program's arguments, or the test binary's.
    pub(super) args: Vec<String>,
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
    let mut words = words[1..].iter();
    while let Some(word) = words.next() {
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
            continue;
        };
        if flag.is_empty() {
            packages.push(word.clone());
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
    let package = match packages.as_slice() {
        [] if test => ".".to_string(),
        [] => return Err("`go run` names no package: e.g. `go run .`".into()),
        [one] => one.clone(),
        more if all_files(more) && !test => {
            return Err(format!(
                "`go run` of several files ({}) is not supported by Delve: run their package \
                 (`go run .`)",
                more.join(" ")
            ))
        }
        more => {
            return Err(format!(
                "Delve debugs the tests of one package at a time, and `go test {}` names \
                 several: name the one that holds the breakpoint (`go test ./internal/x`)",
                more.join(" ")
            ))
        }
    };
    if package.ends_with("/...") || package == "..." {
        return Err(format!(
            "Delve debugs one package at a time, and `{package}` means several: name the one \
             that holds the breakpoint"
        ));
    }
    Ok(GoCommand { mode: if test { "test" } else { "debug" }, package, build_flags, args })
}

fn all_files(words: &[String]) -> bool {
    words.iter().all(|w| w.ends_with(".go"))
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
            Ok(GoCommand { mode, package, build_flags, args }) => {
                format!("{mode} {package} build{build_flags:?} args{args:?}")
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
        check(
            "go test ./...",
            "error: Delve debugs one package at a time, and `./...` means several",
        );
        check("go test ./a ./b", "error: Delve debugs the tests of one package at a time, and `go test ./a ./b` names several");
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
    fn quotes_build_flags_for_delve() {
        let flags =
            ["-race".to_string(), "-gcflags=all=-N -l".to_string(), "-tags=a,b".to_string()];
        assert_eq!(join_build_flags(&flags), "-race -gcflags='all=-N -l' -tags=a,b");
    }
}
