//! Adapters declared in a JSON file, in the shape users know from VS Code's `launch.json`:
//! `debug-mcp.json` in the command's working directory, or the file `DEBUG_MCP_CONFIG` names.
//!
//! ```json
//! {"adapters": {"ruby": {"command": "rdbg", "args": ["--open", "--sock-path=${socket}", "--", "${program}"],
//!                         "connect": "unix", "match": {"extensions": [".rb"], "commands": ["ruby"]},
//!                         "attach": {"localfs": true}}}}
//! ```
//! `launch` (or `attach`, for an adapter that starts the program itself) holds the request's
//! arguments. `ready` (optional) is text the adapter prints once it waits for its client: it
//! is connected to only then. Strings may hold `${workspaceFolder}` (the command's working directory),
//! `${env:NAME}`, `${socket}` (with `"connect": "unix"`: a Unix socket's path in a private
//! directory, new at each start), `${port}` (with `"connect": "tcp"`: a free loopback port,
//! which any local user can reach too), `${program}` and
//! `${args}` (a string that is only `${args}` becomes the program's arguments, one each).

use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

use super::{Connect, Profile};
use crate::debugger::{Code, Failure};
use crate::shell::CommandLine;

/// The file looked for in the working directory.
const FILE: &str = "debug-mcp.json";

pub(crate) struct Configured {
    path: PathBuf,
    adapters: Map<String, Value>,
}

/// One adapter of the file, found for a command.
pub(crate) struct Adapter<'a> {
    path: &'a Path,
    name: &'a str,
    spec: &'a Value,
}

impl Configured {
    /// The file for a command run in `cwd`: `None` when there is none; an error when it
    /// cannot be read or is not the expected shape.
    pub(crate) fn load(cwd: Option<&Path>) -> Result<Option<Configured>, String> {
        let path = match std::env::var_os("DEBUG_MCP_CONFIG") {
            Some(path) => PathBuf::from(path),
            None => {
                let dir = cwd.map(Path::to_path_buf).or_else(|| std::env::current_dir().ok());
                match dir.map(|d| d.join(FILE)).filter(|p| p.is_file()) {
                    Some(path) => path,
                    None => return Ok(None),
                }
            }
        };
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let value: Value = serde_json::from_str(&text)
            .map_err(|e| format!("{} is not JSON: {e}", path.display()))?;
        let Some(adapters) = value["adapters"].as_object() else {
            return Err(format!(
                "{} has no `adapters` object: write {{\"adapters\": {{\"NAME\": {{\"command\": …}}}}}}",
                path.display()
            ));
        };
        Ok(Some(Configured { path, adapters: adapters.clone() }))
    }

    /// The adapter `language` names, else the first whose `match` fits the command's program
    /// or a breakpoint file's extension.
    pub(crate) fn find(
        &self,
        command: &CommandLine,
        language: Option<&str>,
        files: &[&str],
    ) -> Option<Adapter<'_>> {
        let path = self.path.as_path();
        let found = match language {
            Some(language) => self.adapters.iter().find(|(name, _)| *name == language),
            None => self.adapters.iter().find(|(_, spec)| fits(spec, command, files)),
        };
        found.map(|(name, spec)| Adapter { path, name, spec })
    }
}

fn fits(spec: &Value, command: &CommandLine, files: &[&str]) -> bool {
    let extensions = matches(spec, "extensions");
    let ends = |f: &str| extensions.iter().any(|e| f.ends_with(e));
    runs_it(spec, command)
        || files.iter().any(|f| ends(f))
        || command.words.first().is_some_and(|w| ends(w))
}

/// The strings of the adapter's `match.KEY` list.
fn matches<'s>(spec: &'s Value, key: &str) -> Vec<&'s str> {
    spec["match"][key].as_array().into_iter().flatten().filter_map(Value::as_str).collect()
}

/// Whether the command starts with one of the adapter's `match.commands` (`ruby app.rb`).
fn runs_it(spec: &Value, command: &CommandLine) -> bool {
    let program = command.words.first().map(|w| basename(w)).unwrap_or_default();
    matches(spec, "commands").contains(&program)
}

fn basename(word: &str) -> &str {
    Path::new(word).file_name().and_then(|n| n.to_str()).unwrap_or(word)
}

impl Adapter<'_> {
    pub(super) fn profile(&self, command: &CommandLine) -> Result<Profile, Failure> {
        let bad = |what: &str| {
            Failure::new(
                Code::InvalidArguments,
                format!("adapter `{}` in {}: {what}", self.name, self.path.display()),
            )
        };
        let program = self.spec["command"]
            .as_str()
            .ok_or_else(|| bad("`command` (the adapter's program) is missing"))?;
        let connect = match self.spec["connect"].as_str().unwrap_or("stdio") {
            "stdio" => Connect::Stdio,
            "unix" => Connect::Unix,
            "tcp" => Connect::Tcp(free_port().map_err(|e| bad(&format!("no free port: {e}")))?),
            other => return Err(bad(&format!("`connect` is `{other}`: use stdio, unix or tcp"))),
        };
        let (request, arguments) = match (self.spec.get("launch"), self.spec.get("attach")) {
            (_, Some(attach)) => ("attach", attach.clone()),
            (Some(launch), None) => ("launch", launch.clone()),
            (None, None) => ("launch", json!({})),
        };
        if !arguments.is_object() {
            return Err(bad(&format!("`{request}` must be an object")));
        }
        // `ruby app.rb args`: the program is the script when the command is the runtime.
        let words = &command.words;
        let (program_word, args) = match runs_it(self.spec, command) {
            true if words.len() > 1 => (words[1].clone(), words[2..].to_vec()),
            _ => (words[0].clone(), words[1..].to_vec()),
        };
        let cwd = command.dir();
        let port = match connect {
            Connect::Tcp(port) => port.to_string(),
            _ => String::new(),
        };
        let vars = Vars { cwd: cwd.display().to_string(), port, program: program_word, args };
        let mut arguments = vars.expand(&arguments);
        arguments["request"] = request.into();
        arguments["type"] = self.name.into();
        let adapter_args: Vec<String> = self.spec["args"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|a| match vars.expand(a) {
                Value::Array(items) => items,
                one => vec![one],
            })
            .filter_map(|a| a.as_str().map(String::from))
            .collect();
        let program = vars.text(program);
        Ok(Profile {
            name: self.name.to_string(),
            language: self.name.to_string(),
            program,
            args: adapter_args,
            cwd: Some(cwd),
            env: command.env.clone(),
            connect,
            request,
            arguments,
            output_is_adapters: matches!(connect, Connect::Tcp(_) | Connect::Unix),
            stop_on_entry: Some(("stopOnEntry", true.into())),
            ready: self.spec["ready"].as_str().map(String::from),
        })
    }
}

/// A free loopback port, for `${port}`: the adapter binds it a moment later.
fn free_port() -> std::io::Result<u16> {
    Ok(std::net::TcpListener::bind(("127.0.0.1", 0))?.local_addr()?.port())
}

struct Vars {
    cwd: String,
    port: String,
    program: String,
    args: Vec<String>,
}

impl Vars {
    fn expand(&self, value: &Value) -> Value {
        match value {
            Value::String(s) if s == "${args}" => {
                self.args.iter().cloned().map(Value::from).collect()
            }
            Value::String(s) => self.text(s).into(),
            Value::Array(items) => Value::Array(
                items
                    .iter()
                    .flat_map(|item| match (item, self.expand(item)) {
                        (Value::String(s), Value::Array(spread)) if s == "${args}" => spread,
                        (_, one) => vec![one],
                    })
                    .collect(),
            ),
            Value::Object(map) => {
                Value::Object(map.iter().map(|(k, v)| (k.clone(), self.expand(v))).collect())
            }
            other => other.clone(),
        }
    }

    fn text(&self, s: &str) -> String {
        let mut out = s
            .replace("${workspaceFolder}", &self.cwd)
            .replace("${port}", &self.port)
            .replace("${program}", &self.program)
            .replace("${args}", &self.args.join(" "));
        while let Some(at) = out.find("${env:") {
            let Some(end) = out[at..].find('}') else { break };
            let name = &out[at + 6..at + end];
            let value = std::env::var(name).unwrap_or_default();
            out.replace_range(at..at + end + 1, &value);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variables_expand_and_args_spread() {
        let vars = Vars {
            cwd: "/w".into(),
            port: "4711".into(),
            program: "app.rb".into(),
            args: vec!["a".into(), "b c".into()],
        };
        let args = json!(["--port", "${port}", "--", "${program}", "${args}"]);
        assert_eq!(vars.expand(&args), json!(["--port", "4711", "--", "app.rb", "a", "b c"]));
        assert_eq!(vars.expand(&json!({"cwd": "${workspaceFolder}/x"})), json!({"cwd": "/w/x"}));
        std::env::set_var("DEBUG_MCP_TEST_VAR", "v");
        assert_eq!(vars.text("${env:DEBUG_MCP_TEST_VAR}!"), "v!");
    }
}
