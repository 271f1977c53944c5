//! The MCP Tasks extension (`io.modelcontextprotocol/tasks`, 2026-07-28): a `debug-script`
//! call from a client that declares the extension is answered at once with a task handle
//! (`resultType: "task"`), runs on its worker as any call does, and its answer is read with
//! `tasks/get`; `tasks/cancel` cancels it as `notifications/cancelled` cancels a plain call.
//! Tasks live in the server loop that made them (one client context).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

use crate::jsonrpc::{self, Json};

pub(crate) const EXTENSION: &str = "io.modelcontextprotocol/tasks";
/// How often a client should poll a running task.
const POLL_MS: u64 = 500;
/// Finished tasks kept for `tasks/get`; past it, the oldest finished one is forgotten.
const FINISHED_KEPT: usize = 64;

#[derive(Clone, Copy, PartialEq, Debug)]
pub(crate) enum Status {
    Working,
    Completed,
    Cancelled,
}

struct Task {
    status: Status,
    created: String,
    updated: String,
    /// When it finished, in order (for forgetting the oldest).
    finished: u64,
    /// The tool's answer (a `CallToolResult`), once completed.
    result: Option<Json>,
}

/// The tasks of one server loop.
#[derive(Clone, Default)]
pub(crate) struct Tasks(Arc<Mutex<(HashMap<String, Task>, u64)>>);

impl Tasks {
    /// A new working task: its id and the `CreateTaskResult` to answer with.
    pub(crate) fn create(&self) -> (String, Value) {
        let id = format!("t{:016x}{:08x}", crate::sys::random(), crate::sys::random() as u32);
        let now = now();
        let task = Task {
            status: Status::Working,
            created: now.clone(),
            updated: now,
            finished: 0,
            result: None,
        };
        let mut tasks = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let mut answer = describe(&id, &task);
        answer["resultType"] = "task".into();
        tasks.0.insert(id.clone(), task);
        (id, answer)
    }

    /// The call ended: with its answer, or cancelled (`None`).
    pub(crate) fn finish(&self, id: &str, result: Option<Json>) {
        let mut tasks = self.0.lock().unwrap_or_else(|e| e.into_inner());
        tasks.1 += 1;
        let order = tasks.1;
        if let Some(task) = tasks.0.get_mut(id) {
            task.status = if result.is_some() { Status::Completed } else { Status::Cancelled };
            task.result = result;
            task.updated = now();
            task.finished = order;
        }
        let finished: Vec<(u64, String)> = tasks
            .0
            .iter()
            .filter(|(_, t)| t.status != Status::Working)
            .map(|(id, t)| (t.finished, id.clone()))
            .collect();
        if finished.len() > FINISHED_KEPT {
            if let Some((_, oldest)) = finished.iter().min() {
                tasks.0.remove(oldest);
            }
        }
    }

    /// `tasks/get`: the task as it is, with its answer once completed.
    pub(crate) fn get(&self, params: &Value) -> Result<Json, jsonrpc::Error> {
        let id = task_id(params)?;
        let tasks = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let task = tasks.0.get(id).ok_or_else(|| unknown(id))?;
        let mut answer = describe(id, task);
        answer["resultType"] = "complete".into();
        let text = answer.to_string();
        Ok(match &task.result {
            // The answer is text already (a large one is not parsed again): spliced in.
            Some(result) => Json::from_serialized(format!(
                r#"{},"result":{}}}"#,
                &text[..text.len() - 1],
                result.as_str()
            )),
            None => Json::from_serialized(text),
        })
    }

    /// Whether the task is known (for `tasks/cancel`).
    pub(crate) fn status(&self, params: &Value) -> Result<(String, Status), jsonrpc::Error> {
        let id = task_id(params)?;
        let tasks = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let task = tasks.0.get(id).ok_or_else(|| unknown(id))?;
        Ok((id.to_string(), task.status))
    }
}

fn task_id(params: &Value) -> Result<&str, jsonrpc::Error> {
    params
        .get("taskId")
        .and_then(Value::as_str)
        .ok_or_else(|| jsonrpc::Error::new(jsonrpc::INVALID_PARAMS, "a string `taskId` is needed"))
}

fn unknown(id: &str) -> jsonrpc::Error {
    jsonrpc::Error::new(
        jsonrpc::INVALID_PARAMS,
        format!("no task `{id}`: it never existed here, or finished long ago and was forgotten"),
    )
}

fn describe(id: &str, task: &Task) -> Value {
    let status = match task.status {
        Status::Working => "working",
        Status::Completed => "completed",
        Status::Cancelled => "cancelled",
    };
    let mut described = json!({"taskId": id, "status": status, "createdAt": task.created,
                               "lastUpdatedAt": task.updated, "ttlMs": null});
    if task.status == Status::Working {
        described["pollIntervalMs"] = POLL_MS.into();
    }
    described
}

/// Now, as ISO 8601 in UTC (`2026-11-27T09:30:00Z`).
fn now() -> String {
    let seconds = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    iso8601(seconds)
}

fn iso8601(seconds: u64) -> String {
    let (days, rest) = (seconds / 86_400, seconds % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's days_from_civil, inverted).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_iso8601() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00Z");
        assert_eq!(iso8601(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(iso8601(1_795_772_730), "2026-11-27T09:45:30Z");
    }

    #[test]
    fn a_task_is_working_then_completed_with_its_answer() {
        let tasks = Tasks::default();
        let (id, created) = tasks.create();
        assert_eq!(
            (&created["resultType"], &created["status"]),
            (&json!("task"), &json!("working"))
        );
        let params = json!({"taskId": id});
        let working: Value = serde_json::from_str(tasks.get(&params).unwrap().as_str()).unwrap();
        assert_eq!(
            (&working["status"], &working["resultType"]),
            (&json!("working"), &json!("complete"))
        );
        tasks.finish(&id, Some(Json::from_serialized(r#"{"content":[]}"#.into())));
        let done: Value = serde_json::from_str(tasks.get(&params).unwrap().as_str()).unwrap();
        assert_eq!(
            (&done["status"], &done["result"]),
            (&json!("completed"), &json!({"content": []}))
        );
        assert!(done.get("pollIntervalMs").is_none());
        assert!(tasks.get(&json!({"taskId": "nope"})).is_err());
    }
}
