//! Splitting a command line into words with POSIX shell quoting rules, without running a shell.
//!
//! Supported: blanks between words, single quotes, double quotes (with `\"`, `\\`, `\$`, `` \` ``
//! escapes), backslash escapes, and leading `NAME=value` assignments. Anything a shell would
//! expand or interpret (`$`, backquotes, `|`, `&`, `;`, `<`, `>`, parentheses) is refused with a
//! message, because silently passing it through as a literal would run something other than what
//! the agent meant.

/// A command line taken apart: environment assignments, then the program and its arguments;
/// and where and with what input it runs (from the tool's `cwd` and `stdin`).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct CommandLine {
    pub(crate) env: Vec<(String, String)>,
    pub(crate) words: Vec<String>,
    /// The working directory, when not the server's.
    pub(crate) cwd: Option<std::path::PathBuf>,
    /// Text fed to the program's stdin (else it reads end of file at once).
    pub(crate) stdin: Option<String>,
    /// What an answer should say about how the command was run (a launcher run as written).
    pub(crate) notes: Vec<String>,
}

/// One word and, when it is an unquoted `NAME=value`, where the `=` is.
struct Word {
    text: String,
    assignment: Option<usize>,
}

pub(crate) fn split(line: &str) -> Result<CommandLine, String> {
    let words = words(line)?;
    let mut env = Vec::new();
    let mut rest = words.into_iter().peekable();
    while let Some(word) = rest.next_if(|w| w.assignment.is_some()) {
        let eq = word.assignment.expect("checked by next_if");
        env.push((word.text[..eq].to_string(), word.text[eq + 1..].to_string()));
    }
    let words: Vec<String> = rest.map(|w| w.text).collect();
    if words.is_empty() {
        return Err("the command is empty: give a program to run, e.g. `node app.js`".into());
    }
    Ok(CommandLine { env, words, ..CommandLine::default() })
}

/// Where a program runs: `cwd` when given, else the server's working directory.
pub(crate) fn working_dir(cwd: Option<&std::path::Path>) -> std::path::PathBuf {
    cwd.map(std::path::Path::to_path_buf)
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_default()
}

impl CommandLine {
    /// The directory the command runs in ([`working_dir`]).
    pub(crate) fn dir(&self) -> std::path::PathBuf {
        working_dir(self.cwd.as_deref())
    }

    /// The interpreter a script-like program names on its `#!` line (`#!/usr/bin/env python3`
    /// gives `["python3"]`, `#!/usr/bin/env -S node --x` gives `["node", "--x"]`), and the
    /// script's path: found the way `execvp` finds it (a word with a `/` as it is, else through
    /// `PATH`, the command's own assignment first). `None` for binaries and unknown programs.
    pub(crate) fn shebang(&self) -> Option<(Vec<String>, std::path::PathBuf)> {
        use std::io::Read;
        let program = self.words.first()?;
        let path = if program.contains('/') {
            self.resolve(program)
        } else {
            let own = self.env.iter().rev().find(|(k, _)| k == "PATH").map(|(_, v)| v.clone());
            let search = own.or_else(|| std::env::var("PATH").ok())?;
            search
                .split(':')
                .map(|dir| std::path::Path::new(dir).join(program))
                .find(|p| p.is_file())?
        };
        let mut head = [0u8; 256];
        let n = std::fs::File::open(&path).and_then(|mut f| f.read(&mut head)).ok()?;
        let line = head[..n].strip_prefix(b"#!")?.split(|&b| b == b'\n').next()?;
        let mut words: Vec<String> =
            String::from_utf8_lossy(line).split_whitespace().map(String::from).collect();
        let is_env = words.first().is_some_and(|w| w == "/usr/bin/env" || w == "/bin/env");
        if is_env {
            words.remove(0);
            if words.first().is_some_and(|w| w == "-S") {
                words.remove(0);
            }
        }
        (!words.is_empty()).then(|| (words, std::path::absolute(&path).unwrap_or(path)))
    }

    /// The command with the launchers in front of it taken off, so that debug-mcp starts the
    /// program itself: `env [-C dir] [NAME=value]... cmd`, `npx bin` (the project's
    /// `node_modules/.bin/bin`), and `npm test`, `npm start`, `npm run name` (and `yarn`,
    /// `pnpm`): the package.json script, when it is one plain command, with the project's
    /// `node_modules/.bin` first on `PATH` as npm would put it.
    pub(crate) fn without_launchers(mut self) -> Result<CommandLine, String> {
        for _ in 0..8 {
            let program = self.words.first().map(|w| base_name(w)).unwrap_or_default();
            self = match program.as_str() {
                "env" => self.without_env()?,
                "npx" => self.without_npx()?,
                "npm" | "pnpm" | "yarn" => self.without_package_script()?,
                _ => return Ok(self.through_node_shebang()),
            };
            // A launcher that runs as written (its note says so) is the program: npm, npx, yarn
            // and pnpm are Node scripts, run by node so that a session can debug them too.
            if !self.notes.is_empty() {
                return Ok(self.through_node_shebang());
            }
        }
        Err("the command starts launchers within launchers: run the program directly".into())
    }

    /// A script with a `#!/usr/bin/env node` line (a package's bin, `node_modules/.bin/mocha`)
    /// runs as `node script args`, so that debug-mcp can give node its inspector flag.
    fn through_node_shebang(self) -> CommandLine {
        let is_node = |word: &str| base_name(word) == "node";
        if is_node(&self.words[0]) {
            return self;
        }
        match self.shebang() {
            Some((mut interpreter, script)) if interpreter.first().is_some_and(|i| is_node(i)) => {
                interpreter.push(script.display().to_string());
                interpreter.extend(self.words.iter().skip(1).cloned());
                CommandLine { words: interpreter, ..self }
            }
            _ => self,
        }
    }

    /// A path as the command sees it: relative to its `cwd`.
    pub(crate) fn resolve(&self, path: &str) -> std::path::PathBuf {
        match &self.cwd {
            Some(cwd) => cwd.join(path),
            None => std::path::absolute(path).unwrap_or_else(|_| path.into()),
        }
    }

    fn without_env(mut self) -> Result<CommandLine, String> {
        let mut words = self.words.split_off(1).into_iter().peekable();
        while let Some(word) = words.peek().cloned() {
            if let Some(dir) = word.strip_prefix("--chdir=") {
                self.cwd = Some(self.resolve(dir));
            } else if word == "-C" || word == "--chdir" {
                words.next();
                let dir = words.peek().cloned().ok_or("`env -C` needs a directory")?;
                self.cwd = Some(self.resolve(&dir));
            } else if word.starts_with('-') {
                return Err(format!(
                    "`env {word}` is not supported: give the variables as NAME=value words (or \
                     the tool's `env`), and the directory as `env -C dir` (or the tool's `cwd`)"
                ));
            } else if let Some((name, value)) = word.split_once('=') {
                self.env.push((name.to_string(), value.to_string()));
            } else {
                break;
            }
            words.next();
        }
        self.words = words.collect();
        if self.words.is_empty() {
            return Err("`env` with no command: give the program to run after it".into());
        }
        Ok(self)
    }

    /// `npx bin args`: the project's own `node_modules/.bin/bin`, found from `cwd` upwards.
    /// Anything else (a package to fetch, `npx -p pkg cmd`, `npx -c '…'`) runs npx as written,
    /// with a note: every Node process it starts is followed.
    fn without_npx(mut self) -> Result<CommandLine, String> {
        let mut words = self.words[1..].iter();
        let name = loop {
            match words.next() {
                Some(w) if matches!(w.as_str(), "--yes" | "-y" | "--no-install" | "--no") => {}
                Some(w) if w.starts_with('-') => break None,
                Some(w) => break Some(w),
                None => return Err("`npx` with no command: give the program to run".into()),
            }
        };
        match name.and_then(|name| self.project_bin(name)) {
            Some(bin) => {
                let rest: Vec<String> = words.cloned().collect();
                self.words = std::iter::once(bin.display().to_string()).chain(rest).collect();
                Ok(self)
            }
            None => {
                let note = format!(
                    "Note: `{}` ran through npx itself (what it runs is not a bin of this \
                     project's node_modules); every Node process it started was followed, npx's \
                     own included.",
                    join(&self.words)
                );
                self.notes.push(note);
                Ok(self)
            }
        }
    }

    /// `node_modules/.bin/name` in `cwd` or the nearest folder above it that has one.
    fn project_bin(&self, name: &str) -> Option<std::path::PathBuf> {
        self.project_bins().into_iter().map(|bin| bin.join(name)).find(|p| p.is_file())
    }

    /// Every `node_modules/.bin` folder from `cwd` up, nearest first.
    fn project_bins(&self) -> Vec<std::path::PathBuf> {
        let start = self.resolve(".");
        start.ancestors().map(|dir| dir.join("node_modules/.bin")).filter(|d| d.is_dir()).collect()
    }

    /// `npm test`, `npm start`, `npm run name -- args` (and `yarn`, `pnpm`; with `--prefix`,
    /// `-C`, `--cwd`, `-w`, `--silent` and such): the script from package.json, run by
    /// debug-mcp itself. A form it does not read (a workspace filter, `npm exec`, a script with
    /// `pre`/`post` scripts that npm would run too) runs the package manager as written: every
    /// Node process it starts is followed all the same, and a note says so.
    fn without_package_script(self) -> Result<CommandLine, String> {
        match read_package_script(&self)? {
            Some(script) => self.into_package_script(script),
            None => {
                let manager = base_name(&self.words[0]);
                let note = format!(
                    "Note: `{}` ran through {manager} itself (debug-mcp runs a package.json \
                     script directly only in its plain forms); every Node process {manager} \
                     started was followed, {manager}'s own included.",
                    join(&self.words)
                );
                Ok(CommandLine { notes: vec![note], ..self })
            }
        }
    }

    /// The command a package.json script runs, with the project's `node_modules/.bin` first
    /// on `PATH` as npm puts it.
    fn into_package_script(mut self, script: PackageScript) -> Result<CommandLine, String> {
        let PackageScript { dir, text, extra } = script;
        self.cwd = Some(dir);
        // A script that needs a shell (`a && b`, `$VAR`) runs through one, as npm runs it: every
        // Node process it starts is followed all the same.
        let (mut command, extra) = match split(&text) {
            Ok(command) => (command, extra),
            Err(_) => {
                let quoted = extra.iter().map(|w| quote(w));
                let line: Vec<String> = std::iter::once(text.clone()).chain(quoted).collect();
                let words = vec!["sh".to_string(), "-c".to_string(), line.join(" ")];
                (CommandLine { words, ..CommandLine::default() }, Vec::new())
            }
        };
        // As npm does: every `node_modules/.bin` from the project's folder up, then PATH.
        let bins = self.project_bins();
        let mut path: Vec<String> = bins.iter().map(|d| d.display().to_string()).collect();
        path.extend(std::env::var("PATH").ok());
        self.env.push(("PATH".into(), path.join(":")));
        self.env.append(&mut command.env);
        self.words = command.words.into_iter().chain(extra).collect();
        Ok(self)
    }
}

/// A package.json script to run: the package's folder, the script's text, and the words after
/// its name (after `--`).
#[derive(Debug, PartialEq)]
struct PackageScript {
    dir: std::path::PathBuf,
    text: String,
    extra: Vec<String>,
}

/// Reads `npm|pnpm|yarn [options] (test|start|run NAME|NAME) [--] [args]`. `None` for a form
/// to run as written; an error for one that cannot run at all (no package.json, no such
/// script).
fn read_package_script(command: &CommandLine) -> Result<Option<PackageScript>, String> {
    let manager = base_name(&command.words[0]);
    let npm = manager == "npm";
    let mut dir = command.dir();
    let mut workspace = None;
    let mut name: Option<String> = None;
    // `run` was read: the next word that is not an option names the script.
    let mut run = false;
    let mut extra = Vec::new();
    let mut words = command.words[1..].iter();
    while let Some(word) = words.next() {
        // yarn and pnpm pass every word after the script's name to it; npm too after `--`,
        // and the words that are not options.
        if name.is_some() && (!npm || word == "--" || !word.starts_with('-')) {
            let rest = std::iter::once(word).chain(words.by_ref());
            extra.extend(rest.skip_while(|w| npm && *w == "--").cloned());
            break;
        }
        if let Some(option) = word.strip_prefix('-') {
            let (option, inline) = match option.split_once('=') {
                Some((option, value)) => (format!("-{option}"), Some(value.to_string())),
                None => (word.clone(), None),
            };
            let mut value = || inline.clone().or_else(|| words.next().cloned());
            match (manager.as_str(), option.as_str()) {
                ("npm", "--prefix" | "-C") | ("pnpm", "--dir" | "-C") | ("yarn", "--cwd") => {
                    let Some(to) = value() else { return Ok(None) };
                    dir = dir.join(to);
                }
                ("npm", "--workspace" | "-w") => workspace = value(),
                (_, "--silent" | "-s" | "--quiet" | "-q" | "--if-present" | "--no-color") => {}
                (_, "--loglevel" | "--color") => {
                    value();
                }
                _ => return Ok(None),
            }
            continue;
        }
        match word.as_str() {
            _ if run => name = Some(word.clone()),
            "test" | "t" | "tst" => name = Some("test".into()),
            "start" => name = Some("start".into()),
            "run" | "run-script" | "rum" | "urn" => run = true,
            other if !npm && !is_manager_command(other) => name = Some(other.into()),
            _ => return Ok(None),
        }
    }
    let Some(name) = name else { return Ok(None) };
    finish(&manager, dir, workspace, name, extra)
}

/// The script `name` of the package in `dir` (or its workspace), once the words are read.
fn finish(
    manager: &str,
    dir: std::path::PathBuf,
    workspace: Option<String>,
    name: String,
    extra: Vec<String>,
) -> Result<Option<PackageScript>, String> {
    let dir = match workspace {
        None => dir,
        Some(workspace) => match find_workspace(&dir, &workspace) {
            Some(found) => found,
            None => return Ok(None),
        },
    };
    let manifest = dir.join("package.json");
    let text = std::fs::read_to_string(&manifest)
        .map_err(|e| format!("cannot read {}: {e}", manifest.display()))?;
    let json: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| format!("{} is not JSON: {e}", manifest.display()))?;
    let scripts = &json["scripts"];
    // npm runs `pretest` and `posttest` around `test`: let it.
    let hooks = [format!("pre{name}"), format!("post{name}")];
    if manager == "npm" && hooks.iter().any(|hook| scripts[hook].is_string()) {
        return Ok(None);
    }
    let text = match scripts[&name].as_str() {
        Some(text) => text.to_string(),
        // yarn and pnpm run a package's bin by its name too; `npm start` without a script
        // runs `node server.js`.
        None if manager != "npm" || name == "start" => return Ok(None),
        None => return Err(format!("{} has no `{name}` script", manifest.display())),
    };
    Ok(Some(PackageScript { dir, text, extra }))
}

/// yarn's and pnpm's own commands, which are not scripts.
fn is_manager_command(word: &str) -> bool {
    matches!(
        word,
        "add"
            | "install"
            | "i"
            | "remove"
            | "rm"
            | "exec"
            | "dlx"
            | "workspace"
            | "workspaces"
            | "why"
            | "list"
            | "ls"
            | "info"
            | "link"
            | "unlink"
            | "up"
            | "upgrade"
            | "create"
            | "node"
            | "bin"
            | "config"
            | "cache"
            | "init"
            | "publish"
            | "pack"
            | "outdated"
    )
}

/// The folder of the workspace `name` (a path, or a package's name) under the project in
/// `dir`: its package.json's `workspaces` (`["packages/*", "app"]`, or `{packages: [...]}`).
fn find_workspace(dir: &std::path::Path, name: &str) -> Option<std::path::PathBuf> {
    let direct = dir.join(name);
    if direct.join("package.json").is_file() {
        return Some(direct);
    }
    let text = std::fs::read_to_string(dir.join("package.json")).ok()?;
    let json: serde_json::Value = serde_json::from_str(&text).ok()?;
    let patterns =
        json["workspaces"].as_array().or_else(|| json["workspaces"]["packages"].as_array())?;
    let mut folders = Vec::new();
    for pattern in patterns.iter().filter_map(serde_json::Value::as_str) {
        match pattern.strip_suffix("/*") {
            Some(parent) => {
                let mut children: Vec<_> = std::fs::read_dir(dir.join(parent))
                    .into_iter()
                    .flatten()
                    .flatten()
                    .map(|e| e.path())
                    .collect();
                children.sort();
                folders.extend(children);
            }
            None if !pattern.contains('*') => folders.push(dir.join(pattern)),
            None => {}
        }
    }
    folders.into_iter().find(|folder| {
        std::fs::read_to_string(folder.join("package.json"))
            .ok()
            .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
            .is_some_and(|json| json["name"] == name)
    })
}

/// A word as a POSIX shell reads it back: in single quotes unless it is plainly safe.
fn quote(word: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c);
    if !word.is_empty() && word.chars().all(safe) {
        return word.to_string();
    }
    format!("'{}'", word.replace('\'', r"'\''"))
}

/// Whether a command line (`sh -c 'greet' --times 2`) runs a POSIX shell.
pub(crate) fn is_shell(command: &str) -> bool {
    let program = command.split_whitespace().next().unwrap_or_default();
    matches!(base_name(program).as_str(), "sh" | "bash" | "dash" | "zsh" | "ksh" | "ash")
}

fn base_name(program: &str) -> String {
    std::path::Path::new(program).file_name().and_then(|n| n.to_str()).unwrap_or(program).into()
}

fn words(line: &str) -> Result<Vec<Word>, String> {
    let mut words = Vec::new();
    let mut chars = line.chars().peekable();
    loop {
        while chars.next_if(|c| c.is_ascii_whitespace()).is_some() {}
        if chars.peek().is_none() {
            return Ok(words);
        }
        let mut text = String::new();
        // Still possible that this word is NAME=value: everything so far unquoted name chars.
        let mut name_so_far = true;
        let mut assignment = None;
        while let Some(&c) = chars.peek() {
            if c.is_ascii_whitespace() {
                break;
            }
            chars.next();
            match c {
                '\'' => {
                    name_so_far = false;
                    loop {
                        match chars.next() {
                            Some('\'') => break,
                            Some(c) => text.push(c),
                            None => return Err("unterminated single quote in the command".into()),
                        }
                    }
                }
                '"' => {
                    name_so_far = false;
                    loop {
                        match chars.next() {
                            Some('"') => break,
                            Some('\\') => match chars.next() {
                                Some(c @ ('"' | '\\' | '$' | '`')) => text.push(c),
                                Some('\n') => {}
                                Some(c) => {
                                    text.push('\\');
                                    text.push(c);
                                }
                                None => {
                                    return Err("unterminated double quote in the command".into())
                                }
                            },
                            Some(c @ ('$' | '`')) => return Err(unsupported(c)),
                            Some(c) => text.push(c),
                            None => return Err("unterminated double quote in the command".into()),
                        }
                    }
                }
                '\\' => {
                    name_so_far = false;
                    match chars.next() {
                        Some('\n') => {}
                        Some(c) => text.push(c),
                        None => return Err("the command ends with a lone backslash".into()),
                    }
                }
                '$' | '`' | '|' | '&' | ';' | '<' | '>' | '(' | ')' => return Err(unsupported(c)),
                '=' if name_so_far && assignment.is_none() && is_name(&text) => {
                    assignment = Some(text.len());
                    text.push('=');
                }
                c => {
                    if assignment.is_none() && !(c == '_' || c.is_ascii_alphanumeric()) {
                        name_so_far = false;
                    }
                    text.push(c);
                }
            }
        }
        words.push(Word { text, assignment });
    }
}

fn is_name(text: &str) -> bool {
    let mut chars = text.chars();
    chars.next().is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

fn unsupported(c: char) -> String {
    format!(
        "`{c}` needs a shell, and the command runs without one: write the words out literally, \
         or quote the character ('{c}') if it is part of an argument"
    )
}

/// Quotes words so that [`split`] gives them back: used to show a command, and by the `run`
/// subcommand to pass its argv through the same path as the tool. Leading `NAME=value` words stay
/// assignments, as they would on a shell's command line.
pub(crate) fn join(words: &[String]) -> String {
    let quote = |word: &str| {
        let plain = !word.is_empty()
            && word.chars().all(|c| c.is_ascii_alphanumeric() || "-_./:,+@%^".contains(c));
        if plain {
            word.to_string()
        } else {
            format!("'{}'", word.replace('\'', r"'\''"))
        }
    };
    let mut leading = true;
    let mut parts = Vec::with_capacity(words.len());
    for word in words {
        match word.split_once('=') {
            Some((name, value)) if leading && is_name(name) => {
                parts.push(format!("{name}={}", quote(value)));
            }
            _ => {
                leading = false;
                parts.push(quote(word));
            }
        }
    }
    parts.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(line: &str, expected: &str) {
        let got = match split(line) {
            Ok(c) => {
                let env: Vec<String> = c.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
                format!("env{env:?} words{:?}", c.words)
            }
            Err(e) => format!("error: {}", e.split(':').next().unwrap_or_default()),
        };
        assert_eq!(got, expected, "line: {line}");
    }

    #[test]
    fn reads_shebang_lines() {
        let test = crate::scratch::TestDir::new("shebang");
        let dir = &test.0;
        let check = |content: &[u8], expected: Option<&[&str]>| {
            let script = dir.join("script");
            std::fs::write(&script, content).unwrap();
            let words = vec![script.display().to_string()];
            let command = CommandLine { words, ..CommandLine::default() };
            let got = command.shebang();
            let expected = expected
                .map(|w| (w.iter().map(|s| s.to_string()).collect::<Vec<_>>(), script.clone()));
            assert_eq!(got, expected, "{}", String::from_utf8_lossy(content));
        };
        check(b"#!/v/bin/python3\nimport x\n", Some(&["/v/bin/python3"]));
        check(b"#!/usr/bin/env python3\n", Some(&["python3"]));
        check(b"#!/usr/bin/env -S node --no-warnings\n", Some(&["node", "--no-warnings"]));
        check(b"#! /bin/sh -e\n", Some(&["/bin/sh", "-e"]));
        check(b"\x7fELF\x02\x01", None);
        check(b"#!\n", None);
        // Found through the command's own PATH, as execvp would.
        let command = CommandLine {
            env: vec![("PATH".into(), format!("/nowhere:{}", dir.display()))],
            words: vec!["script".into()],
            ..CommandLine::default()
        };
        std::fs::write(dir.join("script"), "#!/usr/bin/env python\n").unwrap();
        assert_eq!(command.shebang(), Some((vec!["python".into()], dir.join("script"))));
    }

    #[test]
    fn reads_package_scripts_as_package_managers_do() {
        let test = crate::scratch::TestDir::new("scripts");
        let root = &test.0;
        let write = |path: &str, json: serde_json::Value| {
            let file = root.join(path);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(file, json.to_string()).unwrap();
        };
        write(
            "package.json",
            serde_json::json!({"workspaces": ["packages/*"], "scripts": {
                "test": "node check.js", "lint": "node lint.js", "prelint": "node pre.js"}}),
        );
        write(
            "packages/api/package.json",
            serde_json::json!({"name": "@x/api", "scripts": {"test": "node api.js --ci"}}),
        );
        let check = |line: &str, expected: &str| {
            let mut command = split(line).unwrap();
            command.cwd = Some(root.clone());
            let got = match read_package_script(&command) {
                Ok(Some(PackageScript { dir, text, extra })) => {
                    let dir = dir.strip_prefix(root).unwrap().display().to_string();
                    format!("[{dir}] {text} {extra:?}")
                }
                Ok(None) => "as written".into(),
                Err(e) => format!("error: {}", e.rsplit("package.json ").next().unwrap()),
            };
            assert_eq!(got, expected, "{line}");
        };
        check("npm test", "[] node check.js []");
        check("npm t -- --grep x", r#"[] node check.js ["--grep", "x"]"#);
        check("npm test extra", r#"[] node check.js ["extra"]"#);
        check("npm --silent run test", "[] node check.js []");
        check("npm run --silent test", "[] node check.js []");
        check("npm run-script test --loglevel=warn", "[] node check.js []");
        check("npm --prefix packages/api test", "[packages/api] node api.js --ci []");
        check("npm -C packages/api test", "[packages/api] node api.js --ci []");
        check("npm -w @x/api test", "[packages/api] node api.js --ci []");
        check("npm --workspace=packages/api test", "[packages/api] node api.js --ci []");
        check(
            "pnpm -C packages/api test --watch",
            r#"[packages/api] node api.js --ci ["--watch"]"#,
        );
        check("pnpm --dir=packages/api run test", "[packages/api] node api.js --ci []");
        check(
            "yarn --cwd packages/api test -t x",
            r#"[packages/api] node api.js --ci ["-t", "x"]"#,
        );
        check("yarn test", "[] node check.js []");
        // Run by the package manager itself: what debug-mcp does not read, and what npm runs
        // more of (prelint).
        check("npm -w nowhere test", "as written");
        check("npm run lint", "as written");
        check("npm --workspaces test", "as written");
        check("npm exec mocha", "as written");
        check("npm test --unknown-flag", "as written");
        check("npm run", "as written");
        check("npm start", "as written");
        check("yarn workspace @x/api test", "as written");
        check("pnpm --filter @x/api test", "as written");
        check("pnpm vitest run", "as written");
        // What cannot run at all.
        check("npm run nope", "error: has no `nope` script");
    }

    #[test]
    fn splits_like_a_shell() {
        check("node app.js", r#"env[] words["node", "app.js"]"#);
        check("  node   'my app.js'  ", r#"env[] words["node", "my app.js"]"#);
        check(r#"node "a \"b\" \\ \x" c\ d"#, r#"env[] words["node", "a \"b\" \\ \\x", "c d"]"#);
        check("node ''", r#"env[] words["node", ""]"#);
        check("node a'b'\"c\"", r#"env[] words["node", "abc"]"#);
        check(
            "FOO=1 BAR='x y' node a.js X=2",
            r#"env["FOO=1", "BAR=x y"] words["node", "a.js", "X=2"]"#,
        );
        check("'FOO=1' node", r#"env[] words["FOO=1", "node"]"#);
        check("A-B=1 node", r#"env[] words["A-B=1", "node"]"#);
        check("_X9=a=b node", r#"env["_X9=a=b"] words["node"]"#);
        check("node -e 'a|b;c&d$e'", r#"env[] words["node", "-e", "a|b;c&d$e"]"#);
        check("node 'caf\u{e9} #1%.js'", "env[] words[\"node\", \"caf\u{e9} #1%.js\"]");
        check("", "error: the command is empty");
        check("FOO=1", "error: the command is empty");
        check("node 'a", "error: unterminated single quote in the command");
        check("node \"a", "error: unterminated double quote in the command");
        check("node a | cat", "error: `|` needs a shell, and the command runs without one");
        check("node $HOME/a.js", "error: `$` needs a shell, and the command runs without one");
        check("node \"$HOME\"", "error: `$` needs a shell, and the command runs without one");
        check("node a.js; rm x", "error: `;` needs a shell, and the command runs without one");
    }

    #[test]
    fn join_round_trips() {
        for words in [
            vec!["node", "a b.js", "it's", "", "x=1", "$HOME", "é"],
            vec!["FOO=1", "B=x y", "node", "C=1"],
        ] {
            let words: Vec<String> = words.into_iter().map(String::from).collect();
            let line = join(&words);
            let back = split(&line).unwrap();
            let mut all: Vec<String> = back.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
            all.extend(back.words);
            assert_eq!(all, words, "line: {line}");
        }
    }
}
