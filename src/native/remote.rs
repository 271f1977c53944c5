//! Programs that run elsewhere (in a container, from a copy of their files) under a debug
//! server of their own, attached to by its port: a headless Delve, or `lldb-server` /
//! `gdbserver` through lldb-dap. `pathMappings` become the adapter's own translation
//! (Delve's `substitutePath`, lldb's `sourceMap`), so breakpoints are given, and frames
//! answered, in the local tree.

use std::path::Path;
use std::sync::Arc;

use serde_json::{json, Value};

use super::{binary_kind, lldb_dap, not_installed, Binary, Native, Profile};
use crate::debugger::model::PathMapping;
use crate::debugger::Failure;

impl Native {
    /// Delve already listening (`dlv --headless --listen … --accept-multiclient exec ./app`),
    /// attached to as a remote target: it runs the program, we only connect. Its paths are
    /// mapped in `attach` (`Flavour::map_paths`).
    pub(crate) fn delve_remote() -> Native {
        let arguments = json!({"name": "debug-mcp", "type": "go", "request": "attach",
                               "mode": "remote"});
        Native(Arc::new(Profile { request: "attach", ..Profile::delve(arguments) }))
    }

    /// lldb-dap, started here, attached to a gdb-remote server (`lldb-server gdbserver
    /// HOST:PORT ./app`, `gdbserver`) at `host:port`; `program` is the executable (a copy
    /// with its debug information) whose symbols it reads.
    pub(crate) fn lldb_remote(
        host: &str,
        port: u16,
        program: &Path,
        language: &str,
        mappings: &[PathMapping],
    ) -> Result<Native, Failure> {
        let Some(adapter) = lldb_dap() else {
            return Err(not_installed("lldb-dap", "apt-get install lldb-19"));
        };
        let source_map: Vec<_> =
            mappings.iter().map(|m| json!([m.remote, m.local.display().to_string()])).collect();
        let mut arguments = json!({"name": "debug-mcp", "type": "lldb-dap", "request": "attach",
            "program": program.display().to_string(), "gdb-remote-port": port,
            "gdb-remote-hostname": host, "sourceMap": source_map});
        let rust = binary_kind(program) == Some(Binary::Rust);
        arguments["initCommands"] = super::symbols::init_commands(program, rust).into();
        let profile = Profile {
            language: language.to_string(),
            request: "attach",
            stop_on_entry: None,
            ..Profile::lldb(&adapter, arguments)
        };
        Ok(Native(Arc::new(profile)))
    }
}

/// The REPL command that lists the program's source files before it runs, as `evaluate`
/// arguments: Delve's `dlv sources` (every file, one a line); for a gdb-remote server's program
/// given no `sourceMap`, lldb's line tables of the files `named` (`Line table for PATH in …`).
pub(super) fn sources_request(adapter: &str, arguments: &Value, named: &[&str]) -> Option<Value> {
    let expression = match adapter {
        "delve" => "dlv sources".to_string(),
        _ if arguments.get("gdb-remote-port").is_some()
            && arguments["sourceMap"].as_array().is_some_and(Vec::is_empty)
            && !named.is_empty() =>
        {
            let quoted: Vec<String> = named.iter().map(|n| lldb_quoted(n)).collect();
            format!("`image dump line-table {}", quoted.join(" "))
        }
        _ => return None,
    };
    Some(json!({"expression": expression, "context": "repl"}))
}

/// The files in [`sources_request`]'s answer.
pub(super) fn sources(answer: &Value) -> Vec<String> {
    let text = answer["result"].as_str().unwrap_or_default();
    let file = |line: &str| match line.strip_prefix("Line table for ") {
        Some(rest) => rest.rsplit_once(" in `").map_or(rest, |(path, _)| path).to_string(),
        None => line.to_string(),
    };
    text.lines()
        .filter(|line| line.starts_with('/') || line.starts_with("Line table for "))
        .map(file)
        .collect()
}

/// The REPL command that maps paths once attached, as `evaluate` arguments: Delve's `dlv
/// config substitutePath FROM TO` (from the local folder to the program's; its words are split
/// at spaces, so a folder with one is not guessed), lldb's `settings set target.source-map`.
pub(super) fn map_paths_request(adapter: &str, mapping: &PathMapping) -> Option<Value> {
    let local = mapping.local.to_str()?;
    let expression = match adapter {
        "delve"
            if !local.contains(char::is_whitespace)
                && !mapping.remote.contains(char::is_whitespace) =>
        {
            format!("dlv config substitutePath {local} {}", mapping.remote)
        }
        "delve" => return None,
        _ => format!(
            "`settings set target.source-map {} {}",
            lldb_quoted(&mapping.remote),
            lldb_quoted(local)
        ),
    };
    Some(json!({"expression": expression, "context": "repl"}))
}

/// A word of an lldb command, quoted.
fn lldb_quoted(word: &str) -> String {
    format!("\"{}\"", word.replace('\\', "\\\\").replace('"', "\\\""))
}
