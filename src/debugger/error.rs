//! Why a tool call produced no answer: a stable [`Code`] an agent can branch on, a message that
//! says what happened and what to do, and details for `structuredContent`. docs/tools.md's error
//! tables document every code; a test keeps them in step.

use serde_json::{Map, Value};

/// Declares [`Code`]: each code's variant and wire form, once; `ALL` and `as_str` follow.
macro_rules! codes {
    ($($variant:ident = $text:literal,)*) => {
        /// Every error code a tool answers with. `as_str` is the wire form.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub(crate) enum Code {
            $($variant,)*
        }

        impl Code {
            #[cfg(test)]
            pub(crate) const ALL: &[Code] = &[$(Code::$variant,)*];

            pub(crate) fn as_str(self) -> &'static str {
                match self {
                    $(Code::$variant => $text,)*
                }
            }
        }
    };
}

codes! {
    AdapterFailed = "adapter_failed",
    AttachFailed = "attach_failed",
    BadSourceMap = "bad_source_map",
    Busy = "busy",
    CommandNotFound = "command_not_found",
    DuplicateBreakpoint = "duplicate_breakpoint",
    Exited = "exited",
    FileNotFound = "file_not_found",
    HostNotAllowed = "host_not_allowed",
    InspectorFailed = "inspector_failed",
    Internal = "internal",
    InvalidArguments = "invalid_arguments",
    InvalidCommand = "invalid_command",
    InvalidExpression = "invalid_expression",
    InvalidPath = "invalid_path",
    LaunchFailed = "launch_failed",
    LineOutOfRange = "line_out_of_range",
    NoAdapter = "no_adapter",
    NoBreakpoint = "no_breakpoint",
    NoCodeAtLine = "no_code_at_line",
    NoDebugpy = "no_debugpy",
    NoInspector = "no_inspector",
    NoProcess = "no_process",
    NoSession = "no_session",
    NoSourceMap = "no_source_map",
    NoVariable = "no_variable",
    NotLaunched = "not_launched",
    PortInUse = "port_in_use",
    ProgramStopped = "program_stopped",
    Running = "running",
    SpawnFailed = "spawn_failed",
    Timeout = "timeout",
    TooManyCalls = "too_many_calls",
    TooManySessions = "too_many_sessions",
    UnknownTool = "unknown_tool",
    Unsupported = "unsupported",
    WrongProcess = "wrong_process",
}

impl std::fmt::Display for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a run produced no answer.
#[derive(Debug)]
pub(crate) enum Failure {
    /// The client cancelled: no response at all.
    Cancelled,
    /// A tool error with a stable code, a message, and details for `structuredContent`.
    Error { code: Code, message: String, details: Map<String, Value> },
}

impl Failure {
    pub(crate) fn new(code: Code, message: impl Into<String>) -> Failure {
        Failure::Error { code, message: message.into(), details: Map::new() }
    }

    /// `with`, unless the failure already says `key`.
    pub(crate) fn or_with(self, key: &str, value: Value) -> Failure {
        match &self {
            Failure::Error { details, .. } if details.contains_key(key) => self,
            _ => self.with(key, value),
        }
    }

    /// The message an agent reads.
    pub(crate) fn message(&self) -> &str {
        match self {
            Failure::Cancelled => "cancelled",
            Failure::Error { message, .. } => message,
        }
    }

    pub(crate) fn with(mut self, key: &str, value: Value) -> Failure {
        if let Failure::Error { details, .. } = &mut self {
            details.insert(key.to_string(), value);
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every code is documented in docs/tools.md, where agents and their authors look them up.
    #[test]
    fn every_code_is_documented() {
        let readme = include_str!("../../docs/tools.md");
        let missing: Vec<&str> = Code::ALL
            .iter()
            .map(|c| c.as_str())
            .filter(|c| !readme.contains(&format!("`{c}`")))
            .collect();
        assert_eq!(missing, Vec::<&str>::new(), "codes missing from docs/tools.md");
    }
}
