//! Following every process of a program: the private channel over which each one reports its
//! inspector. A runtime's bootloader (Node's `node/boot.js`, loaded through `NODE_OPTIONS`) runs
//! first in every process the program starts, however it is started (`fork`, `spawn` of node,
//! npm, a test runner's workers). A process without an inspector of its own opens one on a free
//! loopback port, writes one line `{pid, ppid, url, argv, execArgv}` into a named pipe only this
//! user can open, and waits for a debugger. The pipe, not stderr, because children's stderr is
//! often piped into their parent and never reaches us.
//!
//! The pipe and the bootloader live in a directory of their own, removed with the [`Channel`].
//! Its reader thread turns each line into a [`REPORTED`] event on the run's event channel, in
//! order with the inspectors' own events. We hold the pipe open for writing too, so its reader
//! never sees end of file between writers, and so that dropping the channel can wake it to stop.

use std::fs::{self, File};
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;

use crossbeam_channel::Sender;
use serde_json::{json, Value};

use crate::cdp::{Event, Origin};
use crate::thread::JoinOnDrop;
use crate::{log, sys};

/// The environment variable that names the pipe to the bootloader.
pub(crate) const CHANNEL_VAR: &str = "DEBUG_MCP_CHANNEL";
/// The event a report becomes: `{pid, parent, url, command}`. Lower case, so no CDP domain
/// can take it for its own.
pub(crate) const REPORTED: &str = "debugMcp.processReported";
/// What the reader thread is told to stop by.
const STOP: &str = "stop\n";

/// A Node process that opened its inspector and waits for us.
#[derive(Debug, Clone)]
pub(crate) struct Report {
    pub(crate) pid: u32,
    pub(crate) parent: u32,
    pub(crate) url: String,
    /// The command it runs, for answers (`node t1.test.js`).
    pub(crate) command: String,
}

impl Report {
    pub(crate) fn from_event(params: &Value) -> Option<Report> {
        let number = |key: &str| params[key].as_u64().and_then(|n| u32::try_from(n).ok());
        Some(Report {
            pid: number("pid")?,
            parent: number("parent").unwrap_or(0),
            url: params["url"].as_str()?.to_string(),
            command: params["command"].as_str().unwrap_or_default().to_string(),
        })
    }

    fn to_event(&self) -> Event {
        let params = json!({
            "pid": self.pid, "parent": self.parent, "url": self.url, "command": self.command,
        });
        Event { method: REPORTED.to_string(), params, origin: Origin::default() }
    }

    fn read(line: &str) -> Option<Report> {
        let report: Value = serde_json::from_str(line).ok()?;
        let words = |key: &str| -> Vec<String> {
            let words = report[key].as_array().into_iter().flatten();
            words.filter_map(Value::as_str).map(String::from).collect()
        };
        let argv = words("argv");
        let mut command: Vec<String> = Vec::new();
        if let Some((node, rest)) = argv.split_first() {
            let node = std::path::Path::new(node).file_name().map(|n| n.to_string_lossy());
            command.push(node.map_or_else(|| "node".into(), |n| n.into_owned()));
            command.extend(words("execArgv"));
            command.extend(rest.iter().cloned());
        }
        Some(Report {
            pid: u32::try_from(report["pid"].as_u64()?).ok()?,
            parent: report["ppid"].as_u64().and_then(|p| u32::try_from(p).ok()).unwrap_or(0),
            url: report["url"].as_str()?.to_string(),
            command: command.join(" "),
        })
    }
}

/// The pipe the program's processes report on, and the thread that reads it.
pub(crate) struct Channel {
    dir: PathBuf,
    /// Our own write end: keeps the pipe open, and wakes the reader to stop.
    writer: File,
    reader: Option<JoinOnDrop>,
}

impl Channel {
    /// Makes the directory, the bootloader (`boot`, named `boot_name`) and the pipe, and starts
    /// turning reports into events on `events`.
    pub(crate) fn open(
        boot_name: &str,
        boot: &str,
        events: Sender<Event>,
    ) -> Result<Channel, String> {
        let dir = crate::scratch::private_dir("follow")
            .map_err(|e| format!("cannot make the channel child processes report on: {e}"))?;
        let made = (|| {
            fs::write(dir.join(boot_name), boot)?;
            sys::make_fifo(&dir.join("reports"))?;
            // Read and write: opening a pipe that way never blocks, and the reader never sees
            // end of file while we hold it.
            let pipe = fs::OpenOptions::new().read(true).write(true).open(dir.join("reports"))?;
            Ok::<_, std::io::Error>((pipe.try_clone()?, pipe))
        })();
        let (reading, writer) = made.map_err(|e| {
            let _ = fs::remove_dir_all(&dir);
            format!("cannot make the channel child processes report on in {}: {e}", dir.display())
        })?;
        let reader = JoinOnDrop::spawn("follow", move || read(reading, &events));
        Ok(Channel { dir, writer, reader: Some(reader) })
    }

    /// Where the bootloader is.
    pub(crate) fn boot(&self, boot_name: &str) -> PathBuf {
        self.dir.join(boot_name)
    }

    /// The pipe's path, for [`CHANNEL_VAR`].
    pub(crate) fn path(&self) -> String {
        self.dir.join("reports").display().to_string()
    }
}

fn read(pipe: File, events: &Sender<Event>) {
    for line in BufReader::new(pipe).lines() {
        let Ok(line) = line else { return };
        if format!("{line}\n") == STOP {
            return;
        }
        match Report::read(&line) {
            Some(report) => {
                log::debug(format_args!("process {} reports {}", report.pid, report.url));
                if events.send(report.to_event()).is_err() {
                    return;
                }
            }
            None => log::warn(format_args!("unreadable report: {}", log::clip(&line))),
        }
    }
}

impl Drop for Channel {
    fn drop(&mut self) {
        // The pipe goes first, so no process starts to report after this; then the reader is
        // told to stop and joined.
        let _ = fs::remove_dir_all(&self.dir);
        let _ = self.writer.write_all(STOP.as_bytes());
        self.reader.take();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_report() {
        let line = r#"{"pid":12,"ppid":3,"url":"ws://127.0.0.1:1/x","argv":["/usr/bin/node","/a/t1.test.js"],"execArgv":["--test"]}"#;
        let report = Report::read(line).unwrap();
        assert_eq!((report.pid, report.parent), (12, 3));
        assert_eq!(report.command, "node --test /a/t1.test.js");
        assert!(Report::read("{}").is_none());
    }

    #[test]
    fn a_channel_delivers_lines_and_stops() {
        let (events, received) = crossbeam_channel::unbounded();
        let channel = Channel::open("boot.js", "", events).unwrap();
        let line = r#"{"pid":7,"ppid":1,"url":"ws://127.0.0.1:2/y","argv":["node","a.js"]}"#;
        let mut pipe = fs::OpenOptions::new().write(true).open(channel.path()).unwrap();
        pipe.write_all(format!("{line}\n").as_bytes()).unwrap();
        let event = received.recv_timeout(std::time::Duration::from_secs(5)).unwrap();
        let report = Report::from_event(&event.params).unwrap();
        assert_eq!((report.pid, report.url.as_str()), (7, "ws://127.0.0.1:2/y"));
        let dir = channel.dir.clone();
        drop(channel);
        assert!(!dir.exists());
    }
}
