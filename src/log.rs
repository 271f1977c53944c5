//! Diagnostics on stderr, quiet by default. `DEBUG_MCP_LOG` sets the level: `off`, `error` (the
//! default), `warn`, `info` or `debug` (which also shows the MCP and CDP traffic).
//!
//! This is for the people running the server. Messages for the MCP client go through
//! `notifications/message` instead (see `mcp.rs`); nothing here writes to stdout.

use std::fmt;
use std::io::Write;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::OnceLock;
use std::time::Instant;

const OFF: u8 = 0;
const ERROR: u8 = 1;
const WARN: u8 = 2;
const INFO: u8 = 3;
const DEBUG: u8 = 4;

static LEVEL: AtomicU8 = AtomicU8::new(ERROR);

/// Reads `DEBUG_MCP_LOG`; an unknown value is reported and the default kept.
pub(crate) fn init_from_env() {
    START.get_or_init(Instant::now);
    let Ok(value) = std::env::var("DEBUG_MCP_LOG") else {
        return;
    };
    let level = match value.to_ascii_lowercase().as_str() {
        "off" | "none" => OFF,
        "error" => ERROR,
        "warn" | "warning" => WARN,
        "info" => INFO,
        "debug" | "trace" => DEBUG,
        other => {
            error(format_args!(
                "DEBUG_MCP_LOG={other} is not a level: use off, error, warn, info or debug"
            ));
            return;
        }
    };
    LEVEL.store(level, Ordering::Relaxed);
}

pub(crate) fn enabled_debug() -> bool {
    LEVEL.load(Ordering::Relaxed) >= DEBUG
}

/// When the process started, for the milliseconds shown on each line.
static START: OnceLock<Instant> = OnceLock::new();

fn write(level: u8, tag: &str, args: fmt::Arguments) {
    if LEVEL.load(Ordering::Relaxed) >= level {
        let ms = START.get_or_init(Instant::now).elapsed().as_secs_f64() * 1000.0;
        let _ = writeln!(std::io::stderr().lock(), "debug-mcp {ms:9.1}ms {tag}: {args}");
    }
}

pub(crate) fn error(args: fmt::Arguments) {
    write(ERROR, "error", args);
}

pub(crate) fn warn(args: fmt::Arguments) {
    write(WARN, "warn", args);
}

pub(crate) fn info(args: fmt::Arguments) {
    write(INFO, "info", args);
}

pub(crate) fn debug(args: fmt::Arguments) {
    write(DEBUG, "debug", args);
}

/// The first 2000 bytes of a traffic line, so a 5 MB script source does not flood the terminal.
pub(crate) fn clip(line: &str) -> &str {
    if line.len() <= 2000 {
        return line;
    }
    let mut end = 2000;
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    &line[..end]
}
