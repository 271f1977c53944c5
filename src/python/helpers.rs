//! debug-mcp's Python files and the directory they are written in, first on a debuggee's
//! `PYTHONPATH`: the value probe, the tracer, the debugger, and a `sitecustomize.py` that starts
//! them. The directory is made once per server in its scratch directory (where no one else can
//! have put a module of their own first).
//!
//! Their compiled code is kept for this user's next server. sitecustomize.py's `load_own`
//! compiles each of our modules once per server and Python version and keeps the code
//! (marshal) beside them, so a server's first Python program pays for compiling the tracer
//! (~20 ms of its start on 3.11) and the next ones do not. `debug-mcp-server run` is one server
//! per command: it paid that at every run. So the server keeps the compiled code in this user's
//! cache directory (`$XDG_CACHE_HOME/debug-mcp`, else `~/.cache/debug-mcp`), in a folder named
//! by a hash of the modules' sources (`python-HASH`: another version's code is never read):
//! copied into the helper directory when the helpers are written there, and back when the
//! server ends.
//!
//! That code runs in every program debugged, so the folder is used only when it, and the
//! folders it is in up to the cache directory, are this user's own directories (not symlinks)
//! that no one else may write (`scratch::kept_dir`); otherwise nothing is kept and nothing
//! read. Only the server writes there (a file at a time, renamed into place); programs write
//! their code in the helper directory.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use crate::{log, scratch};

pub(super) const PROBE: &str = include_str!("probe.py");
const SITECUSTOMIZE: &str = include_str!("sitecustomize.py");
const SITE: &str = include_str!("site.py");
const TRACE: &str = include_str!("trace.py");
const RUN: &str = include_str!("run.py");
const PYTEST_PLUGIN: &str = include_str!("pytest_plugin.py");
const HANG: &str = include_str!("hang.py");
const CALLS: &str = include_str!("calls.py");
const SYNTAX: &str = include_str!("syntax.py");
const SESSION: &str = include_str!("session.py");
const STOPS: &str = include_str!("stops.py");
const ADAPTER: &str = include_str!("adapter.py");
/// debugpy's adapter behind our guard on its ports, run as a script (`adapter.py`).
pub(crate) const ADAPTER_FILE: &str = "debug_mcp_adapter.py";

/// Our Python files by the names they have in the helper directory.
const HELPERS: [(&str, &str); 12] = [
    ("debug_mcp_probe.py", PROBE),
    ("sitecustomize.py", SITECUSTOMIZE),
    ("debug_mcp_site.py", SITE),
    ("debug_mcp_trace.py", TRACE),
    ("debug_mcp_run.py", RUN),
    ("debug_mcp_pytest.py", PYTEST_PLUGIN),
    ("debug_mcp_hang.py", HANG),
    ("debug_mcp_calls.py", CALLS),
    ("debug_mcp_syntax.py", SYNTAX),
    ("debug_mcp_session.py", SESSION),
    ("debug_mcp_stops.py", STOPS),
    (ADAPTER_FILE, ADAPTER),
];

/// The helper directory made, if it was.
static HELPER_DIR: Mutex<Option<PathBuf>> = Mutex::new(None);

/// The directory holding the probe and sitecustomize.py, written once per server in its
/// scratch directory (where no one else can have put a module of their own first), with the
/// code of our modules compiled by an earlier server, where one kept it.
pub(crate) fn helper_dir() -> Result<PathBuf, String> {
    let mut made = HELPER_DIR.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(dir) = made.as_ref() {
        return Ok(dir.clone());
    }
    let dir = crate::scratch::private_dir("python")
        .and_then(|dir| {
            for (name, text) in HELPERS {
                fs::write(dir.join(name), text)?;
            }
            Ok(dir)
        })
        .map_err(|e| format!("cannot write debug-mcp's Python helpers: {e}"))?;
    bring(&dir);
    *made = Some(dir.clone());
    Ok(dir)
}

/// Keeps the code of our modules compiled during this server for the next (when the server
/// ends, before its scratch directory goes).
pub(crate) fn keep_compiled() {
    if let Some(dir) = HELPER_DIR.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
        keep(dir);
    }
}

/// A folder of another version's code unused this long is removed when code is kept.
const UNUSED: Duration = Duration::from_secs(30 * 24 * 3600);

/// Copies the kept code into `helpers` (the scratch helper directory just written).
fn bring(helpers: &Path) {
    let Some(kept) = folder(false) else { return };
    for file in compiled(&kept) {
        let into = helpers.join(placed(&file));
        let brought = match into.parent() {
            Some(dir) if dir != helpers => scratch::make_private(dir),
            _ => Ok(()),
        };
        if let Err(e) = brought.and_then(|()| fs::copy(kept.join(&file), &into).map(drop)) {
            log::debug(format_args!("kept Python code {}: {e}", file.display()));
        }
    }
}

/// Where a kept file goes in the helper directory: sitecustomize.py's code where Python's
/// import reads it (`__pycache__`), our modules' beside them.
fn placed(file: &Path) -> PathBuf {
    match file.to_string_lossy().starts_with("sitecustomize.") {
        true => Path::new(PYCACHE).join(file),
        false => file.to_path_buf(),
    }
}

const PYCACHE: &str = "__pycache__";

/// Keeps the code compiled in `helpers` that is not kept yet.
fn keep(helpers: &Path) {
    let made = compiled(helpers);
    if made.is_empty() {
        return;
    }
    let Some(kept) = folder(true) else { return };
    for file in made {
        if kept.join(&file).exists() {
            continue;
        }
        let part = kept.join(format!(".{}.{}", file.display(), std::process::id()));
        let copied = fs::copy(helpers.join(placed(&file)), &part)
            .and_then(|_| fs::rename(&part, kept.join(&file)));
        if let Err(e) = copied {
            let _ = fs::remove_file(&part);
            log::debug(format_args!("cannot keep Python code {}: {e}", file.display()));
        }
    }
    scratch::prune_kept(&kept, "python-", UNUSED);
}

/// The names of the compiled code in `dir` (a helper directory, or a kept folder):
/// our modules' (`debug_mcp_trace.cpython-311-a70d0d0a.code`) and sitecustomize.py's
/// (`sitecustomize.cpython-311.pyc`, in a helper directory's `__pycache__`).
fn compiled(dir: &Path) -> Vec<PathBuf> {
    let names = |dir: &Path| -> Vec<String> {
        let Ok(entries) = fs::read_dir(dir) else { return Vec::new() };
        entries.flatten().map(|entry| entry.file_name().to_string_lossy().into_owned()).collect()
    };
    let mut found = names(dir);
    found.extend(names(&dir.join(PYCACHE)));
    found
        .into_iter()
        .filter(|name| {
            (name.starts_with("debug_mcp_") && name.ends_with(".code"))
                || (name.starts_with("sitecustomize.") && name.ends_with(".pyc"))
        })
        .map(PathBuf::from)
        .collect()
}

/// This version's folder (`make`: made where missing), when it is safe to use.
fn folder(make: bool) -> Option<PathBuf> {
    scratch::kept_dir(&format!("python-{:016x}", fingerprint(&HELPERS)), make)
}

/// FNV-1a of the version and every module's name and text.
fn fingerprint(sources: &[(&str, &str)]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let version = env!("CARGO_PKG_VERSION");
    for part in std::iter::once(version).chain(sources.iter().flat_map(|(n, t)| [*n, *t])) {
        for byte in part.bytes().chain([0]) {
            hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    hash
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn another_version_of_the_sources_has_another_folder() {
        let one = fingerprint(&[("a.py", "x = 1\n")]);
        assert_eq!(one, fingerprint(&[("a.py", "x = 1\n")]));
        assert_ne!(one, fingerprint(&[("a.py", "x = 2\n")]));
        assert_ne!(one, fingerprint(&[("a.p", "yx = 1\n")]));
    }
}
