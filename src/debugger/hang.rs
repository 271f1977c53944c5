//! Where a program hangs: when a `debug-script` run reaches its timeout (or `hang`, a stretch
//! with no hit, output or process change), each runtime stops every thread it follows and walks
//! its stack ([`Walked`]); this builds each thread's record the same way for every runtime: its
//! own frames, top first, capped as a failure's are and with their locals, the rest counted,
//! and what it waits on as its frames say (a lock, a channel, a sleep, a join).

use serde_json::{json, Value};

use crate::debugger::limits::FAILURE_FRAMES;

/// One frame of a hung thread's stack, top first.
#[derive(Debug, Clone)]
pub(crate) struct Walked {
    pub(crate) function: String,
    pub(crate) file: Option<String>,
    pub(crate) line: u64,
    /// The program's own code (not the runtime's, a library's or an installed package's).
    pub(crate) own: bool,
}

/// `{process, thread, state, frames: [{function, file, line, locals}], framesOmitted?}`: the
/// own frames listed (at most [`FAILURE_FRAMES`], `locals(i)` giving those of `walked[i]`),
/// the others counted; `state` the runtime's word when it has one (`idle`), else what the
/// runtime's and libraries' frames above the program's own wait on, else `running`.
pub(crate) fn thread_record(
    process: u32,
    thread: &str,
    walked: &[Walked],
    state: Option<&str>,
    locals: &mut dyn FnMut(usize) -> Value,
) -> Value {
    let above: Vec<&str> =
        walked.iter().take_while(|w| !w.own).map(|w| w.function.as_str()).collect();
    let state = state
        .or_else(|| waiting_on(&above))
        .or_else(|| walked.iter().find(|w| w.own).filter(|_| !above.is_empty()).and_then(called_at))
        .unwrap_or("running");
    // A thread that runs in a library's code (a loop that never ends inside a package) is
    // shown where it is: the library's frames above the program's own, marked, so the
    // function that spins is named.
    let spinning = (state == "running").then(|| {
        (0..walked.len())
            .take_while(|&i| !walked[i].own)
            .filter(|&i| walked[i].file.is_some())
            .take(LIBRARY_FRAMES)
    });
    let own = (0..walked.len()).filter(|&i| walked[i].own).take(FAILURE_FRAMES);
    let listed: Vec<usize> = spinning.into_iter().flatten().chain(own).collect();
    let frames: Vec<Value> = listed
        .iter()
        .map(|&i| {
            let w = &walked[i];
            let mut frame = json!({"function": w.function, "file": w.file, "line": w.line,
                                   "locals": locals(i)});
            if !w.own {
                frame["library"] = true.into();
            }
            frame
        })
        .collect();
    let mut record =
        json!({"process": process, "thread": thread, "state": state, "frames": frames});
    if walked.len() > listed.len() {
        record["framesOmitted"] = (walked.len() - listed.len()).into();
    }
    record
}

/// Library frames shown above a running thread's own, at most.
const LIBRARY_FRAMES: usize = 3;

/// The threads with one stack as one record: the first of each kind, in order, says how many
/// more are like it (`sameStack`: same process, state and own frames; its locals are its own).
/// A hung Go test of 50 requests had 79 goroutines in four places: 125 KB said, now 6 KB.
pub(crate) fn alike_together(threads: Vec<Value>) -> Vec<Value> {
    let place = |t: &Value| {
        let places = |frames: &Value| -> Vec<(Value, Value, Value)> {
            (frames.as_array().into_iter().flatten())
                .map(|f| (f["function"].clone(), f["file"].clone(), f["line"].clone()))
                .collect()
        };
        let (frames, awaiting) = (places(&t["frames"]), places(&t["awaiting"]));
        let place =
            (&t["process"], &t["state"], &t["waiting"], &t["framesOmitted"], frames, awaiting);
        serde_json::to_string(&place).unwrap_or_default()
    };
    let mut together: Vec<(String, Value)> = Vec::new();
    for thread in threads {
        let key = place(&thread);
        match together.iter_mut().find(|(k, _)| *k == key) {
            Some((_, first)) => {
                let same = first["sameStack"].as_u64().unwrap_or(0) + 1;
                first["sameStack"] = same.into();
            }
            None => together.push((key, thread)),
        }
    }
    together.into_iter().map(|(_, thread)| thread).collect()
}

/// What a thread waits on, from the functions its own frame's line calls (`pthread_join(t,
/// NULL)`, `handle.join()`): for a thread inside calls whose names say nothing (a library
/// without its symbols: lldb names glibc's internal functions `___lldb_unnamed_symbol…`).
fn called_at(frame: &Walked) -> Option<&'static str> {
    let text = std::fs::read_to_string(frame.file.as_ref()?).ok()?;
    let line = text.lines().nth(usize::try_from(frame.line).ok()?.checked_sub(1)?)?;
    let name_char = |c: char| c.is_alphanumeric() || matches!(c, '_' | ':' | '.');
    let called: Vec<&str> = (line.match_indices('(').map(|(at, _)| {
        let before = &line[..at];
        let start = before.rfind(|c: char| !name_char(c)).map_or(0, |i| i + 1);
        &before[start..]
    }))
    .filter(|name| !name.is_empty())
    .collect();
    waiting_on(&called)
}

/// How a function name is matched.
#[derive(Clone, Copy)]
enum Name {
    Has(&'static str),
    Is(&'static str),
}

/// What a thread waits on, from the names of the runtime's and libraries' functions it is in
/// (top first, those above the program's own), in any runtime's spelling: Go's
/// (`runtime.chanrecv1`), Rust's and C's (`std::sync::mpsc::Receiver::recv`,
/// `pthread_mutex_lock`), Python's (`threading.Condition.wait`). The first that says decides.
pub(crate) fn waiting_on(functions: &[&str]) -> Option<&'static str> {
    use Name::{Has, Is};
    const WAITS: &[(&[Name], &str)] = &[
        (
            &[Has("chanrecv"), Has("mpmc::"), Has("mpsc::"), Has("Receiver<"), Is("get")],
            "channel receive",
        ),
        (&[Has("chansend"), Has("Sender<"), Is("put")], "channel send"),
        (&[Has("selectgo")], "select"),
        (&[Has("WaitGroup"), Has("Barrier")], "wait group"),
        (&[Has("Cond"), Has("pthread_cond"), Is("wait")], "condition wait"),
        (
            &[
                Has("Mutex"),
                Has("mutex"),
                Has("RwLock"),
                Has("rwlock"),
                Has("lll_lock"),
                Is("acquire"),
            ],
            "lock",
        ),
        (
            &[
                Has("JoinHandle"),
                Has("JoinInner"),
                Has("pthread_join"),
                Has("clockjoin"),
                Is("join"),
                Is("_wait_for_tstate_lock"),
            ],
            "join",
        ),
        (&[Has("time.Sleep"), Has("nanosleep"), Has("thread::sleep"), Is("sleep")], "sleep"),
        (
            &[
                Has("netpoll"),
                Has("epoll_wait"),
                Is("poll"),
                Is("__poll"),
                Is("select"),
                Is("read"),
                Is("__libc_read"),
                Is("recv"),
                Is("__libc_recv"),
                Is("accept"),
            ],
            "I/O",
        ),
    ];
    // Go's semaphore is under every wait of `sync` (a WaitGroup's, a Mutex's): the frame below
    // it says which, and alone it is a lock.
    const UNDER: &[(&[Name], &str)] = &[(&[Has("Semacquire")], "lock")];
    let first = |rules: &[(&[Name], &'static str)]| {
        functions.iter().find_map(|function| {
            let matches = |name: &Name| match *name {
                Has(part) => function.contains(part),
                Is(whole) => *function == whole || function.ends_with(&format!(".{whole}")),
            };
            rules.iter().find(|(names, _)| names.iter().any(matches)).map(|(_, state)| *state)
        })
    };
    first(WAITS).or_else(|| first(UNDER))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_says_what_unnamed_calls_wait_on() {
        let test = crate::scratch::TestDir::new("hang-line");
        let file = test.0.join("a.c");
        std::fs::write(&file, "int main() {\n  pthread_join(t1, NULL);\n  x = f(y);\n}\n").unwrap();
        let at = |line| Walked {
            function: "main".into(),
            file: Some(file.display().to_string()),
            line,
            own: true,
        };
        assert_eq!(called_at(&at(2)), Some("join"));
        assert_eq!(called_at(&at(3)), None);
        let unnamed = Walked { own: false, file: None, ..at(0) };
        let unnamed = Walked { function: "___lldb_unnamed_symbol3517".into(), ..unnamed };
        let record = thread_record(1, "main", &[unnamed.clone(), at(2)], None, &mut |_| json!({}));
        assert_eq!(record["state"], "join");
        // A thread in its own code runs, whatever its line calls.
        let record = thread_record(1, "main", &[at(2)], None, &mut |_| json!({}));
        assert_eq!(record["state"], "running");
    }

    #[test]
    fn threads_with_one_stack_are_one_record() {
        let at = |thread: &str, line: u64, local: &str| {
            json!({"process": 1, "thread": thread, "state": "lock",
                   "frames": [{"function": "f", "file": "a.go", "line": line, "locals": {"i": local}}]})
        };
        let threads = vec![
            at("[Go 1]", 3, "0"),
            at("[Go 2]", 4, "1"),
            at("[Go 3]", 3, "2"),
            at("[Go 4]", 3, "3"),
        ];
        let together = alike_together(threads);
        assert_eq!(together.len(), 2);
        assert_eq!(
            (&together[0]["thread"], &together[0]["sameStack"]),
            (&json!("[Go 1]"), &json!(2))
        );
        assert_eq!(together[0]["frames"][0]["locals"]["i"], "0");
        assert_eq!(
            (&together[1]["thread"], together[1].get("sameStack")),
            (&json!("[Go 2]"), None)
        );
    }

    #[test]
    fn waits_as_frames_say_them() {
        for (frames, expected) in [
            (
                &["runtime.gopark", "runtime.chanrecv", "runtime.chanrecv1", "main.worker"][..],
                Some("channel receive"),
            ),
            (&["runtime.gopark", "runtime.selectgo", "main.loop"][..], Some("select")),
            (
                &[
                    "runtime.gopark",
                    "sync.runtime_SemacquireMutex",
                    "sync.(*Mutex).lockSlow",
                    "sync.(*Mutex).Lock",
                ][..],
                Some("lock"),
            ),
            (&["runtime.gopark", "time.Sleep", "main.main"][..], Some("sleep")),
            (
                &[
                    "runtime.gopark",
                    "runtime.semacquire1",
                    "sync.runtime_Semacquire",
                    "sync.(*WaitGroup).Wait",
                ][..],
                Some("wait group"),
            ),
            (&["runtime.gopark", "sync.runtime_Semacquire", "main.take"][..], Some("lock")),
            (
                &[
                    "__futex_abstimed_wait_common",
                    "__lll_lock_wait",
                    "pthread_mutex_lock",
                    "transfer",
                ][..],
                Some("lock"),
            ),
            (
                &[
                    "syscall",
                    "std::sys::sync::mutex::futex::Mutex::lock_contended",
                    "bank::transfer",
                ][..],
                Some("lock"),
            ),
            (
                &["__GI___clock_nanosleep", "__GI___nanosleep", "std::thread::sleep"][..],
                Some("sleep"),
            ),
            (
                &["std::sync::mpmc::list::Channel<T>::recv", "std::sync::mpsc::Receiver<T>::recv"]
                    [..],
                Some("channel receive"),
            ),
            (&["__pthread_clockjoin_ex", "std::thread::JoinInner<T>::join"][..], Some("join")),
            (&["_wait_for_tstate_lock", "join"][..], Some("join")),
            (&["wait", "get"][..], Some("condition wait")),
            (&["threading.Condition.wait", "queue.Queue.get"][..], Some("condition wait")),
            (&["epoll_wait", "uv__io_poll"][..], Some("I/O")),
            (&["std::thread::Builder::spawn"][..], None),
            (&[][..], None),
        ] {
            assert_eq!(waiting_on(frames), expected, "{frames:?}");
        }
    }
}
