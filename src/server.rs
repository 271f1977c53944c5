//! The main loop: one `select!` over stdin messages, finished tool calls, signals and a tick that
//! reaps orphans re-parented to the server.
//!
//! The loop never blocks on a tool. A `tools/call` runs on a worker thread of its own, so `ping`,
//! cancellation and further calls are handled while it runs. Each worker owns its debuggee; the
//! loop only keeps the worker's cancel sender and join handle. Shutdown (stdin EOF, SIGTERM,
//! SIGINT) cancels every worker, joins them (each kills its process group on the way out), then
//! closes stdout, in that order.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::Arc;

use crossbeam_channel::{select, Receiver, Sender};

use crate::debugger::Code;
use crate::jsonrpc::{self, Json, Message, Notification, Request, RequestId, Response};
use crate::mcp::{self, Dispatch};
use crate::quota::{Held, Quota};
use crate::sessions::Sessions;
use crate::tasks::Tasks;
use crate::thread::JoinOnDrop;
use crate::tools::{self, Call, ClientLog, Progress, ToolResult};
use crate::{log, process, stdio, sys};

/// How often the main loop reaps orphans that ended by themselves.
const REAP_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// A tool call in flight. Dropping it cancels the call (the worker sees its cancel channel
/// disconnect) and then joins the thread: the fields drop in this order.
struct Worker {
    cancel: Sender<()>,
    /// Held only to be joined on drop.
    _thread: JoinOnDrop,
    /// The call's place in its client's quota, given back once the thread is joined.
    _held: Held,
}

/// The server's two ends, as channels: parsed messages in (or the error response for a line
/// that did not parse), messages out. Over stdio in [`run`], in memory in tests.
pub(crate) struct Connection {
    pub(crate) incoming: Receiver<stdio::Incoming>,
    pub(crate) out: Sender<Message>,
}

pub(crate) fn run() -> std::io::Result<()> {
    let signals = Arc::new(sys::Signals::install()?);
    let (signal_tx, signal_rx) = crossbeam_channel::bounded(1);
    let signal_thread = {
        let signals = signals.clone();
        JoinOnDrop::spawn("signals", move || {
            let signal = signals.wait();
            if signal != 0 {
                let _ = signal_tx.send(signal);
            }
        })
    };
    let stop_reading = Arc::new(AtomicBool::new(false));
    let (out, writer) = stdio::writer();
    let (incoming, reader) = stdio::reader(stop_reading.clone());
    let quota = Quota::new(usize::MAX, crate::quota::sessions_limit());
    serve(Connection { incoming, out }, &quota, &signal_rx);
    // Then the threads that feed and drain the loop.
    stop_reading.store(true, Ordering::Relaxed);
    drop(reader);
    signals.wake();
    drop(signal_thread);
    drop(writer);
    Ok(())
}

/// Serves until `incoming` closes or a signal comes; returns once every call and session has
/// ended and `out` is dropped. Its running calls and open sessions count in `quota`.
pub(crate) fn serve(connection: Connection, quota: &Arc<Quota>, signal_rx: &Receiver<i32>) {
    let Connection { incoming, out } = connection;
    let (done_tx, done_rx) = crossbeam_channel::unbounded::<String>();
    let state = mcp::State::new();
    let sessions = Sessions::counted_in(quota.clone());
    let tasks = Tasks::default();
    let mut workers: HashMap<String, Worker> = HashMap::new();
    // Orphans a debuggee abandoned are re-parented to the server (`sys::become_subreaper`);
    // those that end by themselves are reaped here, whatever else is going on.
    let reap = crossbeam_channel::tick(REAP_EVERY);

    loop {
        select! {
            recv(incoming) -> message => match message {
                Ok(Ok(Message::Request(request))) => {
                    let context = Context { state: &state, out: &out, done: &done_tx, sessions: &sessions, tasks: &tasks, quota };
                    handle_request(&context, request, &mut workers);
                }
                Ok(Ok(Message::Notification(notification))) => handle_notification(&notification, &workers),
                // We send no requests, so a response is unexpected; it needs no answer.
                Ok(Ok(Message::Response(_))) => {}
                Ok(Err(error)) => {
                    let _ = out.send(error.into());
                }
                Err(_) => {
                    log::info(format_args!("stdin closed; shutting down"));
                    break;
                }
            },
            recv(done_rx) -> key => {
                if let Ok(key) = key {
                    workers.remove(&key);
                }
            },
            recv(reap) -> _ => process::reap_orphans(),
            recv(signal_rx) -> signal => {
                log::info(format_args!("signal {} received; shutting down", signal.unwrap_or(0)));
                break;
            },
        }
    }

    // Shutdown order: cancel and join every call (each worker kills its debuggee's process group
    // as it returns), end every session (likewise), then stop sending.
    drop(workers);
    sessions.end_all();
    drop(out);
}

#[cfg(test)]
mod tests;

/// What a request is handled with.
struct Context<'a> {
    state: &'a mcp::State,
    out: &'a Sender<Message>,
    done: &'a Sender<String>,
    sessions: &'a Sessions,
    tasks: &'a Tasks,
    quota: &'a Arc<Quota>,
}

fn handle_request(context: &Context, request: Request, workers: &mut HashMap<String, Worker>) {
    let Context { state, out, done, sessions, tasks, quota } = *context;
    // Change notifications go to a client that said `initialize` (a 2026-07-28 client gets
    // none it did not ask for).
    if request.method == "initialize" {
        sessions.notify_to(out.clone());
    }
    if let Some(result) = task_request(tasks, &request, workers) {
        let _ = out.send(Response { id: Some(request.id), result }.into());
        return;
    }
    let (name, arguments, progress_token, modern, log_level, task) =
        match mcp::handle_request(state, sessions, &request) {
            Dispatch::Tool { name, arguments, progress_token, modern, log_level, task } => {
                (name, arguments, progress_token, modern, log_level, task)
            }
            Dispatch::Reply(result) => {
                let result = result.map(|value| Json::from(&value));
                let _ = out.send(Response { id: Some(request.id), result }.into());
                return;
            }
        };
    let held = match quota.call() {
        Ok(held) => held,
        Err(why) => {
            let refused = ToolResult::error(Code::TooManyCalls, why, serde_json::Map::new());
            let _ = out.send(Response::ok_json(request.id, refused.into_json(modern)).into());
            return;
        }
    };
    // A task's call runs as any other; its answer waits for `tasks/get`.
    let task = task.then(|| tasks.create());
    let key = match &task {
        Some((id, _)) => format!("task:{id}"),
        None => request.id.key(),
    };
    if workers.contains_key(&key) {
        let message = format!("request id {key} is already in use by a call in progress");
        let _ = out.send(Response::err(Some(request.id), jsonrpc::INVALID_REQUEST, message).into());
        return;
    }
    let (cancel_tx, cancel) = crossbeam_channel::bounded(1);
    let call = Call {
        call: crate::call::Call {
            cancel,
            progress: Progress::new(progress_token, out.clone()),
            log: ClientLog {
                level: match (modern, log_level) {
                    (false, _) => state.log_level.clone(),
                    (true, level) => Arc::new(AtomicU8::new(level.unwrap_or(u8::MAX))),
                },
                out: out.clone(),
            },
        },
        sessions: sessions.clone(),
    };
    let out = out.clone();
    let done = done.clone();
    let id: RequestId = request.id;
    if let Some((_, created)) = &task {
        let _ = out.send(Response::ok_json(id.clone(), Json::from(created)).into());
    }
    let tasks = tasks.clone();
    let thread = JoinOnDrop::spawn(&format!("call-{key}"), {
        let key = key.clone();
        move || {
            let result = tools::call(&name, &arguments, &call);
            // A call cancelled as it finished gets no response either (MCP: the receiver of a
            // cancellation does not answer the request), even one that had not begun to wait
            // when the cancellation came.
            let result = result.filter(|_| call.cancel.try_recv().is_err());
            if let Some((task, _)) = &task {
                tasks.finish(task, result.map(|r| r.into_json(true)));
                let _ = done.send(key);
                return;
            }
            match result {
                Some(result) => {
                    let _ = out.send(Response::ok_json(id, result.into_json(modern)).into());
                }
                None => log::info(format_args!("call {key} cancelled; no response sent")),
            }
            let _ = done.send(key);
        }
    });
    workers.insert(key, Worker { cancel: cancel_tx, _thread: thread, _held: held });
}

/// `tasks/get` and `tasks/cancel` (the Tasks extension); `None` for any other request.
fn task_request(
    tasks: &Tasks,
    request: &Request,
    workers: &HashMap<String, Worker>,
) -> Option<Result<Json, jsonrpc::Error>> {
    match request.method.as_str() {
        "tasks/get" => Some(tasks.get(&request.params)),
        "tasks/cancel" => Some(tasks.status(&request.params).map(|(id, status)| {
            if status == crate::tasks::Status::Working {
                if let Some(worker) = workers.get(&format!("task:{id}")) {
                    let _ = worker.cancel.try_send(());
                }
            }
            Json::from(&serde_json::json!({"resultType": "complete"}))
        })),
        _ => None,
    }
}

fn handle_notification(notification: &Notification, workers: &HashMap<String, Worker>) {
    match notification.method.as_str() {
        "notifications/cancelled" => {
            let Some(id) = notification.params.get("requestId") else {
                return;
            };
            if let Some(worker) = workers.get(&id.to_string()) {
                let _ = worker.cancel.try_send(());
            }
        }
        "notifications/initialized" => log::debug(format_args!("client initialized")),
        other => log::debug(format_args!("ignored notification {other}")),
    }
}
