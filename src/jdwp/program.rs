//! What a debugger of the JVM needs whatever it does (`debug-script`'s collector, a
//! session): a probed file as classes name it (its source file name and package), where the
//! program's own sources are, one JVM with its caches and what reads it (locals as previews,
//! a frame's function, whether a class is the program's own), and where a line is in a
//! class's methods.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::Value as Json;

use super::eval::{self, Frame};
use super::values::{Show, Values};
use super::vm::{self, Vm};
use super::wire::{Id, Location};
use crate::debugger::limits::LOCAL_PREVIEW;
use crate::debugger::script::Locals;

/// A probed source file: its name (what a class's `SourceFile` says), its package and where
/// it is.
pub(super) struct File {
    pub(super) name: String,
    pub(super) package: String,
    pub(super) path: PathBuf,
    /// A class of it was prepared in some JVM.
    pub(super) loaded: bool,
}

/// The package a Java source declares (`""` for none).
pub(super) fn package_of(text: &str) -> String {
    let mut in_comment = false;
    for line in text.lines() {
        let mut line = line.trim();
        if in_comment {
            match line.find("*/") {
                Some(end) => {
                    line = line[end + 2..].trim();
                    in_comment = false;
                }
                None => continue,
            }
        }
        if line.starts_with("/*") {
            in_comment = !line.contains("*/");
            continue;
        }
        if line.is_empty() || line.starts_with("//") || line.starts_with('@') {
            continue;
        }
        return match line.strip_prefix("package ") {
            Some(rest) => rest.trim_end_matches(';').trim().to_string(),
            None => String::new(),
        };
    }
    String::new()
}

/// Where the program's own sources are: the usual roots under the working directory, and
/// the root of each probed file (its directory above its package's).
pub(super) fn source_roots(cwd: &Path, files: &[File]) -> Roots {
    let mut dirs: Vec<PathBuf> = Vec::new();
    for file in files {
        let mut root = file.path.parent().map(Path::to_path_buf).unwrap_or_default();
        for _ in file.package.split('.').filter(|p| !p.is_empty()) {
            root.pop();
        }
        dirs.push(root);
    }
    for sub in ["src/main/java", "src/test/java", "src", ""] {
        dirs.push(cwd.join(sub));
    }
    // The modules of a multi-module build (Maven's, Gradle's): each `src/*/java` below.
    let mut budget = SOURCES_LOOKED_AT;
    module_roots(cwd, 0, &mut budget, &mut dirs);
    let mut seen = std::collections::HashSet::new();
    dirs.retain(|dir| seen.insert(dir.clone()));
    let mut budget = SOURCES_LOOKED_AT;
    let have_sources = dirs.iter().any(|dir| holds_java(dir, 0, &mut budget));
    Roots { dirs, have_sources }
}

/// Where the program's own sources are, and whether any is there: then a class whose source
/// is not found there is not the program's (a dependency's, the build tool's), whatever its
/// package.
#[derive(Clone)]
pub(super) struct Roots {
    dirs: Vec<PathBuf>,
    have_sources: bool,
}

/// Directory entries looked at, at most, to find whether the roots hold any Java source.
const SOURCES_LOOKED_AT: usize = 5000;

/// Build outputs, dependencies and hidden directories: never where sources are.
fn passed_over(name: &str) -> bool {
    name.starts_with('.') || matches!(name, "target" | "build" | "node_modules" | "out")
}

/// Every `src/<set>/java` (`src/main/java`, `src/test/java`, `src/it/java`) at or below
/// `dir`, within a few levels and `budget` entries.
fn module_roots(dir: &Path, depth: usize, budget: &mut usize, roots: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        if *budget == 0 {
            return;
        }
        *budget -= 1;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let path = entry.path();
        if passed_over(&name) || !path.is_dir() {
            continue;
        }
        if name == "src" {
            for set in std::fs::read_dir(&path).into_iter().flatten().flatten() {
                let java = set.path().join("java");
                if java.is_dir() {
                    roots.push(java);
                }
            }
        } else if depth < 4 {
            module_roots(&path, depth + 1, budget, roots);
        }
    }
}

/// Whether `dir` holds a `.java` file, within a few levels and `budget` entries (build
/// outputs, dependencies and hidden directories passed over).
fn holds_java(dir: &Path, depth: usize, budget: &mut usize) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else { return false };
    for entry in entries.flatten() {
        if *budget == 0 {
            return false;
        }
        *budget -= 1;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let path = entry.path();
        if name.ends_with(".java") && path.is_file() {
            return true;
        }
        if depth < 8 && !passed_over(&name) && path.is_dir() && holds_java(&path, depth + 1, budget)
        {
            return true;
        }
    }
    false
}

/// One JVM of the program.
pub(super) struct Jvm {
    pub(super) conn: usize,
    pub(super) vm: Vm,
    pub(super) values: Values,
    pub(super) pid: u32,
    pub(super) command: String,
    /// The nearest JVM of the program above it (surefire's fork: Maven's).
    pub(super) parent: Option<u32>,
    pub(super) hits: u64,
    pub(super) ended: bool,
    /// Breakpoint requests, to the probe each stands for.
    pub(super) breakpoints: HashMap<i32, usize>,
    /// Classes already given their breakpoints.
    pub(super) bound: Vec<Id>,
    /// The source file of each class of the program's own (None: a library's, or unknown).
    pub(super) own: HashMap<Id, Option<String>>,
    /// With `failures`: the exception request.
    pub(super) failures: Option<i32>,
}

impl Jvm {
    /// A frame's locals as previews (and `this`'s fields when it has no locals).
    pub(super) fn locals_of(&mut self, frame: Frame) -> Json {
        self.locals_shown(frame, frame.thread)
    }

    /// [`Jvm::locals_of`] where no method may run (a thread the VM suspended as a whole):
    /// objects by their fields.
    pub(super) fn locals_without_calls(&mut self, frame: Frame) -> Json {
        self.locals_shown(frame, 0)
    }

    fn locals_shown(&mut self, frame: Frame, calling: Id) -> Json {
        let jvm = self;
        let mut shown = Locals::default();
        match eval::locals(&mut jvm.vm, frame) {
            Some(locals) => {
                for (name, value) in locals {
                    let mut show = Show {
                        vm: &mut jvm.vm,
                        values: &mut jvm.values,
                        thread: calling,
                        budget: LOCAL_PREVIEW * 2,
                        truncated: false,
                    };
                    let preview = show.preview(&value);
                    shown.add(&name, &preview);
                }
            }
            None => shown.add("(locals)", "not compiled in: compile with `javac -g` to read them"),
        }
        shown.into_json()
    }

    /// The source file of a class when it is the program's own: found under the source
    /// roots, or, where the roots hold no source at all (classes built elsewhere), in a
    /// package no library of the JDK, a build tool or a test framework has, named then by
    /// its package's path.
    pub(super) fn own_file(&mut self, roots: &Roots, class: Id) -> Option<String> {
        let jvm = self;
        if let Some(known) = jvm.own.get(&class) {
            return known.clone();
        }
        let signature = jvm.vm.signature(class);
        let found = jvm.vm.source_file(class).and_then(|source| {
            let package = signature.trim_start_matches('L').rsplit_once('/').map_or("", |(p, _)| p);
            let found = roots
                .dirs
                .iter()
                .map(|root| root.join(package).join(&source))
                .find(|p| p.is_file());
            match found {
                Some(path) => Some(path.display().to_string()),
                None if roots.have_sources || is_library(&signature) => None,
                None if package.is_empty() => Some(source),
                None => Some(format!("{package}/{source}")),
            }
        });
        jvm.own.insert(class, found.clone());
        found
    }

    /// Where an exception to be caught at `catch` is handled in effect: since JDK 18
    /// `Method.invoke` (`DirectMethodHandleAccessor`) catches whatever the method it calls
    /// throws only to throw it on wrapped; the frame that called it handles it (a test
    /// runner, for a test). `frames`: the thread's, top first.
    pub(super) fn past_reflection(
        &mut self,
        frames: &[(Id, Location)],
        catch: Location,
    ) -> Location {
        if catch.is_none() || !self.reflective(catch.class) {
            return catch;
        }
        let catching =
            |(_, at): &(Id, Location)| at.class == catch.class && at.method == catch.method;
        let Some(catcher) = frames.iter().position(catching) else { return catch };
        let outer = frames[catcher..].iter().map(|(_, at)| *at);
        outer.into_iter().find(|at| !self.reflective(at.class)).unwrap_or(catch)
    }

    /// Whether an exception to be caught at `catch` is uncaught: nothing catches it, or a
    /// virtual thread's `run` (Java 21), which catches whatever its task throws only to hand
    /// it to the uncaught exception handler, as a platform thread's end does.
    pub(super) fn uncaught(&mut self, catch: Location) -> bool {
        catch.is_none() || self.vm.signature(catch.class) == "Ljava/lang/VirtualThread;"
    }

    /// Whether `class` is part of `Method.invoke`'s machinery (since JDK 18 through method
    /// handles: `LambdaForm$DMH`, `Invokers$Holder` frames between it and the method).
    pub(super) fn reflective(&mut self, class: Id) -> bool {
        let signature = self.vm.signature(class);
        ["Ljdk/internal/reflect/", "Ljava/lang/invoke/"].iter().any(|p| signature.starts_with(p))
            || signature == "Ljava/lang/reflect/Method;"
    }

    /// Whether an exception thrown where `frames` (top first) are, to be caught at `catch`,
    /// leaves the program's own code into a library that catches it (what editors call
    /// user-unhandled): the catching frame is not the program's, and one above it is.
    pub(super) fn leaves_own_code(
        &mut self,
        roots: &Roots,
        frames: &[(Id, Location)],
        catch: Location,
    ) -> bool {
        let catching =
            |(_, at): &(Id, Location)| at.class == catch.class && at.method == catch.method;
        let Some(catcher) = frames.iter().position(catching) else { return false };
        if catch.is_none() || self.own_file(roots, catch.class).is_some() {
            return false;
        }
        frames[..catcher].iter().any(|(_, at)| self.own_file(roots, at.class).is_some())
    }

    /// A frame's function as answers name it: `Orders.total`, `Orders.lambda$main$0`.
    pub(super) fn function(&mut self, location: &Location) -> String {
        let vm = &mut self.vm;
        let class = vm::short_name(&vm.signature(location.class));
        let method = vm.method(location.class, location.method).map(|m| m.name).unwrap_or_default();
        format!("{class}.{method}")
    }
}

/// The place of `line` in a method's line table: the first code index of that line, or of
/// the nearest line after it within the method; `(index, line)`.
pub(super) fn place_in(entries: &[(u64, i32)], line: i32) -> Option<(u64, i32)> {
    let first = entries.iter().map(|e| e.1).min()?;
    let last = entries.iter().map(|e| e.1).max()?;
    if line < first || line > last {
        return None;
    }
    let best = entries.iter().map(|e| e.1).filter(|&l| l >= line).min()?;
    entries.iter().filter(|e| e.1 == best).map(|e| e.0).min().map(|index| (index, best))
}

/// The packages of the JDK, build tools and test frameworks, and of common frameworks: never
/// the program's own.
pub(super) const LIBRARIES: &[&str] = &[
    "java.",
    "javax.",
    "jdk.",
    "sun.",
    "com.sun.",
    "org.junit.",
    "junit.",
    "org.opentest4j.",
    "org.apiguardian.",
    "org.testng.",
    "org.apache.maven.",
    "org.codehaus.plexus.",
    "org.assertj.",
    "org.hamcrest.",
    "org.mockito.",
    "org.gradle.",
    "kotlin.",
    "org.springframework.",
    "org.eclipse.jetty.",
    "io.netty.",
];

/// Whether a class (its JNI signature) is a library's, by its package.
pub(super) fn is_library(signature: &str) -> bool {
    let name = vm::class_name(signature);
    LIBRARIES.iter().any(|p| name.starts_with(p))
}

impl File {
    /// The file at `path` as classes name it: its file name and the package it declares.
    pub(super) fn read(path: PathBuf) -> File {
        let name = path.file_name().unwrap_or_default().to_string_lossy().to_string();
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        File { name, package: package_of(&text), path, loaded: false }
    }

    /// A breakpoint's file (`asked`, as named; `path`, its real path), refused unless Java.
    pub(super) fn java(asked: &Path, path: &Path) -> Result<File, crate::debugger::Failure> {
        if path.extension().is_none_or(|e| e != "java") {
            return Err(crate::debugger::Failure::new(
                crate::debugger::Code::InvalidArguments,
                format!(
                    "{} is not a Java source file: a JVM's breakpoints are in `.java` files",
                    asked.display()
                ),
            ));
        }
        Ok(File::read(path.to_path_buf()))
    }

    /// The `SourceNameMatch` modifier of class-prepare requests for this file's classes.
    pub(super) fn source_match(&self, vm: &Vm) -> Vec<u8> {
        vm.out().u8(12).string(&self.name).bytes
    }

    /// Whether a class (its source file name, its JNI signature) is this file's.
    pub(super) fn has(&self, source: &str, signature: &str) -> bool {
        self.name == source && self.in_package(signature)
    }

    /// Whether a class (its JNI signature) is in this file's package.
    pub(super) fn in_package(&self, signature: &str) -> bool {
        let name = vm::class_name(signature);
        name.rsplit_once('.').map_or("", |(p, _)| p) == self.package
    }
}

impl Jvm {
    /// A JVM of `program` that connected from `peer`: its process found, named by the command
    /// as `typed` when it is the one started, else by its own command line; its parent, the
    /// nearest of `others` (pids of the program's JVMs connected before) above it.
    pub(super) fn connected(
        conn: usize,
        client: super::Client,
        peer: std::net::SocketAddr,
        program: &crate::process::Debuggee,
        typed: &[String],
        others: &[u32],
    ) -> Result<Jvm, super::Error> {
        let vm = Vm::new(client)?;
        let pid = super::launch::pid_of_jvm(program, peer);
        let descendants = program.descendants(None);
        let of = |pid: u32| descendants.iter().find(|d| d.process.pid == pid);
        let command = match of(pid) {
            Some(d) if pid != program.pid() => d.command.clone(),
            _ => crate::shell::join(typed),
        };
        let mut jvm = Jvm::new(conn, vm, pid, command);
        let mut above = of(pid).map(|d| d.parent);
        // Bounded: a chain of parents is no longer than the processes seen.
        for _ in 0..=descendants.len() {
            match above {
                Some(p) if others.contains(&p) => break,
                Some(p) => above = of(p).map(|d| d.parent),
                None => break,
            }
        }
        jvm.parent = above.filter(|p| others.contains(p));
        Ok(jvm)
    }

    /// A JVM that connected (`pid`: its process, 0 when not found), run by `command`.
    pub(super) fn new(conn: usize, vm: Vm, pid: u32, command: String) -> Jvm {
        Jvm {
            conn,
            vm,
            values: Values::default(),
            pid,
            command,
            parent: None,
            hits: 0,
            ended: false,
            breakpoints: HashMap::new(),
            bound: Vec::new(),
            own: HashMap::new(),
            failures: None,
        }
    }
}

/// Where `line` is in a class: the first code index of the line in each method that has it,
/// or (none has it) of the nearest line after it within a method; and that line.
pub(super) fn places(vm: &mut Vm, class: Id, line: u32) -> Option<(Vec<Location>, u32)> {
    let mut places: Vec<(Location, i32)> = Vec::new();
    for method in vm.methods(class) {
        let Some(lines) = vm.lines(class, method.id) else { continue };
        if let Some((index, at)) = place_in(&lines.entries, line as i32) {
            places.push((Location { tag: 1, class, method: method.id, index }, at));
        }
    }
    let best = places.iter().map(|(_, l)| *l).min()?;
    let chosen = places.into_iter().filter(|(_, l)| *l == best).map(|(at, _)| at).collect();
    Some((chosen, best as u32))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_is_placed_where_a_method_has_it_or_just_after() {
        let entries = [(0, 10), (4, 11), (9, 13), (12, 11), (20, 15)];
        assert_eq!(place_in(&entries, 11), Some((4, 11)));
        assert_eq!(place_in(&entries, 12), Some((9, 13)));
        assert_eq!(place_in(&entries, 9), None);
        assert_eq!(place_in(&entries, 16), None);
    }

    #[test]
    fn every_module_of_a_build_is_a_source_root() {
        let test = crate::scratch::TestDir::new("modules");
        for module in ["api/src/main/java/app", "core/src/test/java/app", "target/src/main/java"] {
            std::fs::create_dir_all(test.0.join(module)).unwrap();
        }
        std::fs::write(test.0.join("api/src/main/java/app/A.java"), "package app;").unwrap();
        let roots = source_roots(&test.0, &[]);
        assert!(roots.dirs.contains(&test.0.join("api/src/main/java")), "{:?}", roots.dirs);
        assert!(roots.dirs.contains(&test.0.join("core/src/test/java")), "{:?}", roots.dirs);
        assert!(!roots.dirs.iter().any(|d| d.starts_with(test.0.join("target"))));
        assert!(roots.have_sources);
    }

    #[test]
    fn a_package_is_read_past_comments_and_annotations() {
        assert_eq!(
            package_of("/* license\n * x */\n// c\npackage app.orders;\nclass A {}"),
            "app.orders"
        );
        assert_eq!(package_of("import java.util.List;\nclass A {}"), "");
        assert!(is_library("Lorg/junit/jupiter/api/Assertions;"));
        assert!(!is_library("Lapp/Orders;"));
    }
}
