//! What `debug-output` answers: the console and logpoint messages a session recorded, with
//! their sequence numbers, and the program's stdout and stderr since a cursor.

use serde_json::{json, Value};

use super::Reply;
use crate::debugger::{Code, Failure};
use crate::process::{self, Output};

/// Console and logpoint messages with their sequence numbers (the last `MAX_ENTRIES`),
/// and what `debug-output` answers from them and the program's stdout and stderr.
#[derive(Default)]
pub(crate) struct Console {
    entries: Vec<(u64, Value)>,
    seq: u64,
}

impl Console {
    const MAX_ENTRIES: usize = 1000;

    pub(crate) fn record(&mut self, entry: Value) {
        self.seq += 1;
        self.entries.push((self.seq, entry));
        if self.entries.len() > Console::MAX_ENTRIES {
            self.entries.drain(..self.entries.len() - Console::MAX_ENTRIES);
        }
    }

    /// Output since a cursor (`stdout.stderr.console`, from an earlier answer), without
    /// terminal colour codes when `strip_ansi`.
    pub(crate) fn since(
        &self,
        session: &str,
        output: &Output,
        since: Option<&str>,
        strip_ansi: bool,
    ) -> Reply {
        let [out_at, err_at, console_at] = match since {
            None => [0, 0, 0],
            Some(cursor) => {
                let parts: Option<Vec<u64>> = cursor.split('.').map(|p| p.parse().ok()).collect();
                match parts.as_deref() {
                    Some(&[a, b, c]) => [a, b, c],
                    _ => {
                        return Err(Failure::new(
                            Code::InvalidArguments,
                            "invalid argument `since`: use the `cursor` of an earlier debug-output answer",
                        )
                        .with("field", "since".into()))
                    }
                }
            }
        };
        let (mut stdout, mut stderr, missed, (out_now, err_now)) = output.since(out_at, err_at);
        if strip_ansi {
            (stdout, stderr) = (process::strip_ansi(&stdout), process::strip_ansi(&stderr));
        }
        let console: Vec<Value> = self
            .entries
            .iter()
            .filter(|(seq, _)| *seq > console_at)
            .map(|(_, e)| {
                let mut entry = e.clone();
                if let (true, Some(text)) = (strip_ansi, e["text"].as_str()) {
                    entry["text"] = process::strip_ansi(text).into();
                }
                entry
            })
            .collect();
        let missed = missed || self.entries.first().is_some_and(|(seq, _)| *seq > console_at + 1);
        Ok(json!({"sessionId": session, "stdout": stdout, "stderr": stderr, "console": console,
                  "truncated": missed, "cursor": format!("{out_now}.{err_now}.{}", self.seq)}))
    }
}
