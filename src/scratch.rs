//! The one directory the server writes files in: the Python helpers that go first on a
//! debuggee's `PYTHONPATH`, the bootloader and named pipe child processes report on, a
//! browser's throwaway profile, Delve's build output and config. Nothing else in the crate
//! picks a path to write to, but for what one server keeps for the next ([`kept_dir`]: our
//! Python modules compiled), in the user's own cache directory.
//!
//! The temporary directory is shared with every user of the machine, so a predictable name
//! there is a path another user may have made first (and filled with a `json.py` that a
//! debugged Python program would import, or a symlink that a write would follow). The scratch
//! directory is made once per server, on first use, by one `mkdir` of a name with a random
//! part (`debug-mcp-PID-RANDOM`, mode 0700), which fails on anything already there; it is
//! then checked to be a real directory of ours that no one else may enter. Everything inside
//! it is ours alone. It is removed when the server ends (stdin closed, SIGTERM, SIGINT, the end
//! of `debug-mcp-server run`); a server killed outright leaves it behind, and the next server of the
//! same user removes the scratch directories whose server is gone ([`remove_stale`]).

use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use crate::{log, sys};

/// What every scratch directory's name starts with, then the server's pid and `-`.
const PREFIX: &str = "debug-mcp-";

/// The scratch directory, once made.
static DIR: Mutex<Option<PathBuf>> = Mutex::new(None);

/// The server's scratch directory, made on first use.
pub(crate) fn dir() -> io::Result<PathBuf> {
    let mut dir = DIR.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(dir) = dir.as_ref() {
        return Ok(dir.clone());
    }
    let made = make(&std::env::temp_dir())?;
    log::debug(format_args!("scratch directory {}", made.display()));
    *dir = Some(made.clone());
    Ok(made)
}

/// A new directory in the scratch directory, for one use (`follow-3`, `browser-0`): only this
/// user can enter it, and nothing was there before.
pub(crate) fn private_dir(kind: &str) -> io::Result<PathBuf> {
    static N: AtomicU64 = AtomicU64::new(0);
    let dir = dir()?.join(format!("{kind}-{}", N.fetch_add(1, Ordering::Relaxed)));
    std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
    Ok(dir)
}

/// `dir` made where it is missing, readable by this user only (mode 0700).
pub(crate) fn make_private(dir: &Path) -> io::Result<()> {
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        made => made,
    }
}

/// A path in the scratch directory for a file someone else will write (Delve's build output):
/// `kind-N`, nothing there yet.
pub(crate) fn file_path(kind: &str) -> io::Result<PathBuf> {
    static N: AtomicU64 = AtomicU64::new(0);
    Ok(dir()?.join(format!("{kind}-{}", N.fetch_add(1, Ordering::Relaxed))))
}

/// Removes the scratch directory and everything in it, if it was made. Called once the
/// server has ended every run and session.
pub(crate) fn remove() {
    let made = DIR.lock().unwrap_or_else(|e| e.into_inner()).take();
    if let Some(dir) = made {
        if let Err(e) = std::fs::remove_dir_all(&dir) {
            log::warn(format_args!("cannot remove {}: {e}", dir.display()));
        }
    }
}

/// This user's folder `name` in debug-mcp's cache directory (`$XDG_CACHE_HOME/debug-mcp/NAME`,
/// else `~/.cache/debug-mcp/NAME`; absolute paths only, as the XDG rules say), for what one
/// server keeps for the next; `make`: made where missing (mode 0700). None unless it and every
/// folder on the way from the cache directory is a real directory of this user's (not a
/// symlink) that no one else may write.
pub(crate) fn kept_dir(name: &str, make: bool) -> Option<PathBuf> {
    let absolute = |var: &str| std::env::var_os(var).map(PathBuf::from).filter(|p| p.is_absolute());
    let cache =
        absolute("XDG_CACHE_HOME").or_else(|| absolute("HOME").map(|h| h.join(".cache")))?;
    let ours = cache.join("debug-mcp");
    let kept = ours.join(name);
    for dir in [&cache, &ours, &kept] {
        if make {
            if let Err(e) = make_private(dir) {
                log::debug(format_args!("cannot keep anything in {}: {e}", dir.display()));
                return None;
            }
        }
        if !only_ours(dir) {
            return None;
        }
    }
    Some(kept)
}

/// A real directory of this user's that only this user may write.
fn only_ours(dir: &Path) -> bool {
    std::fs::symlink_metadata(dir).is_ok_and(|m| our_dir(&m, 0o022))
}

/// Marks `kept` (a [`kept_dir`]) used now, and removes its siblings named `prefix…` (other
/// versions') unused for `unused`.
pub(crate) fn prune_kept(kept: &Path, prefix: &str, unused: std::time::Duration) {
    let now = std::time::SystemTime::now();
    let _ = std::fs::File::open(kept).and_then(|dir| dir.set_modified(now));
    let Some(ours) = kept.parent() else { return };
    let Ok(entries) = std::fs::read_dir(ours) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        let stale = std::fs::symlink_metadata(&path).is_ok_and(|m| {
            our_dir(&m, 0)
                && m.modified().is_ok_and(|t| now.duration_since(t).unwrap_or_default() > unused)
        });
        if path != kept && stale && entry.file_name().to_string_lossy().starts_with(prefix) {
            let _ = std::fs::remove_dir_all(&path);
        }
    }
}

/// Makes `debug-mcp-PID-RANDOM` in `parent` with a single mkdir(2), which fails on any
/// existing entry, symlinks included; tries again with another random part if one is there.
fn make(parent: &Path) -> io::Result<PathBuf> {
    let mut last = None;
    for _ in 0..16 {
        let dir = parent.join(format!("{PREFIX}{}-{:016x}", std::process::id(), sys::random()));
        match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => {
                check_private(&dir)?;
                return Ok(dir);
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => {
                return Err(io::Error::new(
                    e.kind(),
                    format!("cannot make a scratch directory in {}: {e}", parent.display()),
                ))
            }
        }
    }
    Err(last.unwrap_or_else(|| io::Error::other("no name was free")))
}

/// Whether `metadata` (not followed through a symlink) is a directory of this user's with none
/// of the permission bits `others` (0o077: no one else may enter it; 0o022: write it).
fn our_dir(metadata: &std::fs::Metadata, others: u32) -> bool {
    metadata.is_dir() && metadata.uid() == sys::effective_uid() && metadata.mode() & others == 0
}

/// A directory (not a symlink) of this user's that no one else may read, write or enter.
fn check_private(dir: &Path) -> io::Result<()> {
    let metadata = std::fs::symlink_metadata(dir)?;
    if !our_dir(&metadata, 0o077) {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("{} is not a private directory of this user's", dir.display()),
        ));
    }
    Ok(())
}

/// Removes the scratch directories of this user's servers that are gone (killed before they
/// could remove their own), in the temporary directory: `debug-mcp-PID-…` directories owned by
/// this user whose PID no longer runs. A directory another user owns is left alone, as is
/// anything that is not a directory.
pub(crate) fn remove_stale() {
    remove_stale_in(&std::env::temp_dir());
}

fn remove_stale_in(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else { return };
    let me = std::process::id();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(server_pid) else { continue };
        if pid == me || sys::pid_exists(pid) {
            continue;
        }
        let path = entry.path();
        let ours = std::fs::symlink_metadata(&path).is_ok_and(|m| our_dir(&m, 0));
        if ours {
            log::debug(format_args!("removing {} (its server, {pid}, is gone)", path.display()));
            if let Err(e) = std::fs::remove_dir_all(&path) {
                log::warn(format_args!("cannot remove {}: {e}", path.display()));
            }
        }
    }
}

/// The server pid in a scratch directory's name (`debug-mcp-1234-…`, as this version and
/// earlier ones named theirs).
fn server_pid(name: &str) -> Option<u32> {
    let rest = name.strip_prefix(PREFIX)?;
    let (pid, tail) = rest.split_once('-')?;
    (!tail.is_empty()).then_some(())?;
    pid.parse().ok().filter(|pid| *pid > 0)
}

/// A directory of its own for a unit test, removed when dropped (also when the test fails).
#[cfg(test)]
pub(crate) struct TestDir(pub(crate) PathBuf);

#[cfg(test)]
impl TestDir {
    pub(crate) fn new(name: &str) -> TestDir {
        let dir = std::env::temp_dir().join(format!("dmcp-test-{name}-{:016x}", sys::random()));
        std::fs::DirBuilder::new().mode(0o700).create(&dir).expect("a fresh test directory");
        TestDir(dir)
    }
}

#[cfg(test)]
impl Drop for TestDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kept_only_in_folders_of_our_own() {
        let test = TestDir::new("kept");
        let dir = test.0.join("mine");
        std::fs::DirBuilder::new().mode(0o700).create(&dir).unwrap();
        assert!(only_ours(&dir));
        std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o777))
            .unwrap();
        assert!(!only_ours(&dir), "others may write it");
        let link = test.0.join("link");
        std::os::unix::fs::symlink(&dir, &link).unwrap();
        assert!(!only_ours(&link), "a symlink");
        assert!(!only_ours(&test.0.join("missing")));
    }

    #[test]
    fn reads_server_pids_from_names() {
        for (name, pid) in [
            ("debug-mcp-123-00ff00ff00ff00ff", Some(123)),
            ("debug-mcp-77-python", Some(77)),
            ("debug-mcp-9-follow-0", Some(9)),
            ("debug-mcp-12", None),
            ("debug-mcp-12-", None),
            ("debug-mcp-x-1", None),
            ("debug-mcp-0-1", None),
            ("other-12-1", None),
        ] {
            assert_eq!(server_pid(name), pid, "{name}");
        }
    }

    #[test]
    fn makes_a_fresh_private_directory_and_removes_only_dead_servers_ones() {
        use std::os::unix::fs::PermissionsExt;
        let test = TestDir::new("scratch");
        let parent = &test.0;
        let made = make(parent).unwrap();
        let mode = std::fs::metadata(&made).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        assert!(made.file_name().unwrap().to_str().unwrap().starts_with(PREFIX));
        // A dead server's directory goes; a live one's, a file and a symlink stay.
        let dead = parent.join("debug-mcp-999999999-python");
        std::fs::create_dir(&dead).unwrap();
        std::fs::write(dead.join("json.py"), "").unwrap();
        let file = parent.join("debug-mcp-999999998-x");
        std::fs::write(&file, "").unwrap();
        let link = parent.join("debug-mcp-999999997-y");
        std::os::unix::fs::symlink(&made, &link).unwrap();
        let live = parent.join(format!("debug-mcp-{}-z", std::process::id()));
        std::fs::create_dir(&live).unwrap();
        remove_stale_in(parent);
        assert!(!dead.exists());
        assert!(file.exists() && link.exists() && live.exists() && made.exists());
    }
}
