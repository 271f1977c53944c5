//! Delve's config file, as debug-mcp runs Delve.
//!
//! At a program's first stop Delve reads the separate debug information of every shared
//! library the program loaded, from the directories its config file names
//! (`debug-info-directories`; `/usr/lib/debug/.build-id` when it names none), where Debian's
//! `libc6-dbg` keeps libc's: 4 MB of compressed DWARF. For a Go program linked to libc
//! (anything importing `net` or `os/user` while cgo is on, as it is where gcc is) the first
//! stop took half a second (a `pause` to its `stopped`: 483-590 ms with `libc6-dbg` installed,
//! 6 ms with the directory below; Delve 1.20.2, a net/http program): before every hang report,
//! every first breakpoint, every package of a `go test ./...`. The program's own frames need
//! none of it (Go keeps its DWARF in the binary), and `dlv dap` takes the directories from
//! nowhere but its config file. So Delve runs with `XDG_CONFIG_HOME` pointing at a config of
//! ours that names one empty directory of ours; `dlv dap` reads nothing else from its config.
//! The program, which Delve starts with Delve's own environment once the launch's `env` is
//! applied to it, gets the user's `XDG_CONFIG_HOME` back through that `env` (or none).
//!
//! One trap: Delve moves a config it finds at its old place (`.dlv/config.yml` in the home
//! directory the user database names) into `$XDG_CONFIG_HOME/dlv` and removes the old one.
//! Pointed at ours, the user's config would be removed with the scratch directory; where one
//! is, Delve runs as the user set it up.

use std::io;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::{log, scratch, sys};

const XDG: &str = "XDG_CONFIG_HOME";

/// Makes Delve read no separate debug information: `env` (Delve's process's) points it at our
/// config, and a launch's `arguments` give the program the `XDG_CONFIG_HOME` it would have
/// had (`env` as the command set it, else the server's). Leaves both as they are when that
/// cannot be done safely.
pub(super) fn without_system_debug_info(env: &mut Vec<(String, String)>, arguments: &mut Value) {
    let program_sees = match env.iter().rev().find(|(name, _)| name == XDG) {
        Some((_, value)) => Value::from(value.as_str()),
        None => match std::env::var_os(XDG) {
            None => Value::Null,
            Some(value) => match value.to_str() {
                Some(value) => value.into(),
                None => return,
            },
        },
    };
    if has_old_config() {
        return;
    }
    match config_home() {
        Ok(home) => point_delve_at(&home, program_sees, env, arguments),
        Err(e) => log::warn(format_args!("Delve keeps its own debug-info directories: {e}")),
    }
}

fn point_delve_at(
    home: &Path,
    program_sees: Value,
    env: &mut Vec<(String, String)>,
    arguments: &mut Value,
) {
    let Some(home) = home.to_str() else { return };
    if arguments["request"] == "launch" {
        if !arguments["env"].is_object() {
            arguments["env"] = Map::new().into();
        }
        arguments["env"][XDG] = program_sees;
    }
    env.push((XDG.into(), home.into()));
}

/// Whether Delve would move a config from its old place (`~/.dlv/config.yml`).
fn has_old_config() -> bool {
    let old = |home: &Path| home.join(".dlv").join("config.yml").exists();
    sys::user_home().is_none_or(|home| old(&home))
        || std::env::var_os("HOME").is_some_and(|home| old(Path::new(&home)))
}

/// The directory to give Delve as `XDG_CONFIG_HOME`, made once per server.
fn config_home() -> io::Result<PathBuf> {
    static HOME: std::sync::Mutex<Option<PathBuf>> = std::sync::Mutex::new(None);
    let mut home = HOME.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(made) = home.as_ref().filter(|made| made.join("dlv/config.yml").is_file()) {
        return Ok(made.clone());
    }
    let made = scratch::private_dir("delve")?;
    write_config(&made)?;
    *home = Some(made.clone());
    Ok(made)
}

/// `dlv/config.yml` in `home`, naming the empty directory `none` beside it.
fn write_config(home: &Path) -> io::Result<()> {
    let none = home.join("none");
    std::fs::create_dir(&none)?;
    std::fs::create_dir(home.join("dlv"))?;
    let config = format!("debug-info-directories: [{}]\n", Value::from(none.display().to_string()));
    std::fs::write(home.join("dlv/config.yml"), config)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn delve_reads_our_config_and_the_program_gets_its_own_back() {
        let test = scratch::TestDir::new("delve");
        write_config(&test.0).unwrap();
        let none = test.0.join("none");
        let config = std::fs::read_to_string(test.0.join("dlv/config.yml")).unwrap();
        assert_eq!(config, format!("debug-info-directories: [\"{}\"]\n", none.display()));
        assert!(std::fs::read_dir(&none).unwrap().next().is_none());

        let ours = ("XDG_CONFIG_HOME".to_string(), test.0.display().to_string());
        let mut env = vec![("A".to_string(), "1".to_string())];
        let mut arguments = json!({"request": "launch", "env": {"A": "1"}});
        point_delve_at(&test.0, "/home/u/cfg".into(), &mut env, &mut arguments);
        assert_eq!(arguments["env"], json!({"A": "1", "XDG_CONFIG_HOME": "/home/u/cfg"}));
        assert_eq!(env.last(), Some(&ours));
        // Unset where the program would not have it; an attach starts no program.
        let mut arguments = json!({"request": "launch"});
        point_delve_at(&test.0, Value::Null, &mut env, &mut arguments);
        assert_eq!(arguments["env"], json!({"XDG_CONFIG_HOME": null}));
        let mut arguments = json!({"request": "attach", "processId": 1});
        point_delve_at(&test.0, Value::Null, &mut env, &mut arguments);
        assert_eq!(arguments, json!({"request": "attach", "processId": 1}));
    }
}
