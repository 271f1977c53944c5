//! debug-mcp's Python modules compiled, kept for this user's next server.
//!
//! sitecustomize.py's `load_own` compiles each of our modules once per server and Python
//! version and keeps the code (marshal) beside them in the server's scratch directory, so a
//! server's first Python program pays for compiling the tracer (~30 ms of its start on 3.11)
//! and the next ones do not. `debug-mcp-server run` is one server per command: it paid that at
//! every run. So the server keeps the compiled code in this user's cache directory
//! (`$XDG_CACHE_HOME/debug-mcp`, else `~/.cache/debug-mcp`), in a folder named by a hash of the
//! modules' sources (`python-HASH`: another version's code is never read): copied into the
//! scratch directory when the helpers are written there, and back when the server ends.
//!
//! That code runs in every program debugged, so the folder is used only when it, and the
//! folders it is in up to the cache directory, are this user's own directories (not symlinks)
//! that no one else may write (`scratch::kept_dir`); otherwise nothing is kept and nothing
//! read. Only the server writes there (a file at a time, renamed into place); programs write
//! their code in the scratch directory as before.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::{log, scratch};

/// A folder of another version's code unused this long is removed when code is kept.
const UNUSED: Duration = Duration::from_secs(30 * 24 * 3600);

/// Copies the kept code into `helpers` (the scratch helper directory just written).
pub(super) fn bring(helpers: &Path, sources: &[(&str, &str)]) {
    let Some(kept) = folder(sources, false) else { return };
    for file in compiled(&kept) {
        if let Err(e) = fs::copy(kept.join(&file), helpers.join(&file)) {
            log::debug(format_args!("kept Python code {}: {e}", file.display()));
        }
    }
}

/// Keeps the code compiled in `helpers` that is not kept yet.
pub(super) fn keep(helpers: &Path, sources: &[(&str, &str)]) {
    let made = compiled(helpers);
    if made.is_empty() {
        return;
    }
    let Some(kept) = folder(sources, true) else { return };
    for file in made {
        if kept.join(&file).exists() {
            continue;
        }
        let part = kept.join(format!(".{}.{}", file.display(), std::process::id()));
        let copied =
            fs::copy(helpers.join(&file), &part).and_then(|_| fs::rename(&part, kept.join(&file)));
        if let Err(e) = copied {
            let _ = fs::remove_file(&part);
            log::debug(format_args!("cannot keep Python code {}: {e}", file.display()));
        }
    }
    scratch::prune_kept(&kept, "python-", UNUSED);
}

/// The names of the compiled modules in `dir` (`debug_mcp_trace.cpython-311-a70d0d0a.code`).
fn compiled(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(dir) else { return Vec::new() };
    entries
        .flatten()
        .map(|entry| PathBuf::from(entry.file_name()))
        .filter(|name| {
            let name = name.to_string_lossy();
            name.starts_with("debug_mcp_") && name.ends_with(".code")
        })
        .collect()
}

/// This version's folder (`make`: made where missing), when it is safe to use.
fn folder(sources: &[(&str, &str)], make: bool) -> Option<PathBuf> {
    scratch::kept_dir(&format!("python-{:016x}", fingerprint(sources)), make)
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
