//! Where a JVM hangs: every thread of the program's stopped and read as the JVM says it is
//! (`ThreadReference.Status`), not guessed from its frames: `lock` (entering a monitor, with
//! the monitor and the thread that holds it), `condition wait` (`Object.wait`,
//! `Condition.await`, `LockSupport.park`), `sleep`, `I/O` (a native read, write or accept),
//! `running`; its frames and the locals of its own.

use serde_json::Value as Json;

use super::eval::Frame;
use super::program::Jvm;
use super::vm::{self, ThreadStatus};
use crate::debugger::hang::{thread_record, Walked};

/// Every thread of the JVM with a frame of the program's own (and `main`), each as `hang`
/// shows it. The JVM is left suspended: it is killed next.
pub(super) fn threads(jvm: &mut Jvm, roots: &super::program::Roots) -> Vec<Json> {
    if jvm.vm.suspend_all().is_err() {
        return Vec::new();
    }
    let mut records = Vec::new();
    for thread in jvm.vm.all_threads() {
        let status = jvm.vm.thread_status(thread);
        if status == ThreadStatus::Zombie {
            continue;
        }
        let name = jvm.vm.thread_name(thread);
        let Ok(frames) = jvm.vm.all_frames(thread) else { continue };
        let walked: Vec<Walked> = frames
            .iter()
            .map(|(_, location)| {
                let own = jvm.own_file(roots, location.class);
                let file = own.clone().or_else(|| jvm.vm.source_file(location.class));
                Walked {
                    function: jvm.function(location),
                    file,
                    line: jvm.vm.line_of(location).unwrap_or(0).max(0) as u64,
                    own: own.is_some(),
                }
            })
            .collect();
        if name != "main" && !walked.iter().any(|w| w.own) {
            continue;
        }
        let joining = walked.iter().take_while(|w| !w.own).any(|w| w.function == "Thread.join");
        let state = match state(jvm, status, frames.first().map(|f| f.1)) {
            "condition wait" if joining => "join",
            state => state,
        };
        let pid = jvm.pid;
        let mut locals = |i: usize| {
            let (id, at) = frames[i];
            // No method runs in a thread the VM suspended as a whole: values by their fields.
            let frame = Frame { thread, frame: id, depth: i, at };
            jvm.locals_without_calls(frame)
        };
        let mut record = thread_record(pid, &name, &walked, Some(state), &mut locals);
        if status == ThreadStatus::Monitor {
            let monitor = jvm.vm.contended_monitor(thread);
            if monitor != 0 {
                let owner = jvm.vm.monitor_owner(monitor);
                let kind = jvm.vm.type_of(monitor).map(|c| vm::short_name(&jvm.vm.signature(c)));
                let mut lock = serde_json::json!({"monitor": kind.unwrap_or_default()});
                if owner != 0 {
                    lock["owner"] = jvm.vm.thread_name(owner).into();
                }
                record["lock"] = lock;
            }
        }
        records.push(record);
    }
    records
}

/// The state a hang answer says, from the JVM's status and the top frame.
fn state(jvm: &mut Jvm, status: ThreadStatus, top: Option<super::wire::Location>) -> &'static str {
    match status {
        ThreadStatus::Monitor => "lock",
        ThreadStatus::Wait => "condition wait",
        ThreadStatus::Sleeping => "sleep",
        _ => {
            let native_io = top.is_some_and(|at| {
                let signature = jvm.vm.signature(at.class);
                let method = jvm.vm.method(at.class, at.method);
                let native = method.is_some_and(|m| m.modifiers & 0x0100 != 0);
                native
                    && ["Ljava/net/", "Lsun/nio/", "Ljava/io/", "Lsun/net/"]
                        .iter()
                        .any(|p| signature.starts_with(p))
            });
            match native_io {
                true => "I/O",
                false => "running",
            }
        }
    }
}
