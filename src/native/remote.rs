//! Programs that run elsewhere (in a container, from a copy of their files) under a debug
//! server of their own, attached to by its port: a headless Delve, or `lldb-server` /
//! `gdbserver` through lldb-dap. `pathMappings` become the adapter's own translation
//! (Delve's `substitutePath`, lldb's `sourceMap`), so breakpoints are given, and frames
//! answered, in the local tree.

use std::path::Path;
use std::sync::Arc;

use serde_json::json;

use super::{binary_kind, lldb_dap, not_installed, rust_formatters, Binary, Native, Profile};
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
        if binary_kind(program) == Some(Binary::Rust) {
            arguments["initCommands"] = rust_formatters().into();
        }
        let profile = Profile {
            language: language.to_string(),
            request: "attach",
            stop_on_entry: None,
            ..Profile::lldb(&adapter, arguments)
        };
        Ok(Native(Arc::new(profile)))
    }
}
