//! A program's stdout and stderr apart under lldb-dap. lldb 19 starts a launched program on
//! one pseudo-terminal for both, and lldb-dap sends all of it as `stdout`: a C program's
//! stderr came back inside its stdout. Here each stream is a named pipe of ours (in a private
//! directory) that lldb opens for the program (`target.output-path`, `target.error-path`),
//! and a thread reads each into the program's [`Output`].

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::io::AsRawFd;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::process::Output;
use crate::sys::{self, Waker};
use crate::thread::JoinOnDrop;

/// The two pipes and their readers; dropping it reads what is left and stops them.
pub(crate) struct Streams {
    dir: PathBuf,
    stop: Arc<AtomicBool>,
    /// One a reader: a waker's poke is drained by the reader that sees it.
    wakers: Vec<Arc<Waker>>,
    readers: Vec<JoinOnDrop>,
}

impl Streams {
    /// Makes the pipes and starts reading them into `output`.
    pub(crate) fn open(output: &Output) -> io::Result<Streams> {
        let dir = crate::scratch::private_dir("stdio")?;
        let stop = Arc::new(AtomicBool::new(false));
        let mut streams = Streams { dir, stop, wakers: Vec::new(), readers: Vec::new() };
        for (name, stderr) in [("stdout", false), ("stderr", true)] {
            let path = streams.dir.join(name);
            sys::make_fifo(&path)?;
            // Read and write, without blocking: opening never waits for the program, and the
            // reader sees no end of file before it is told to stop.
            let pipe = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(&path)?;
            let waker = Arc::new(Waker::new()?);
            streams.wakers.push(waker.clone());
            let (output, stop) = (output.clone(), streams.stop.clone());
            let reader =
                JoinOnDrop::spawn(name, move || read(pipe, &output, stderr, &stop, &waker));
            streams.readers.push(reader);
        }
        Ok(streams)
    }

    /// The lldb commands that give the program these streams, run before it starts.
    pub(crate) fn commands(&self) -> Vec<String> {
        let path = |name: &str| self.dir.join(name).display().to_string();
        vec![
            format!("settings set target.output-path \"{}\"", path("stdout")),
            format!("settings set target.error-path \"{}\"", path("stderr")),
        ]
    }
}

/// Reads `pipe` into `output` until told to `stop`, then what is left in it.
fn read(mut pipe: File, output: &Output, stderr: bool, stop: &AtomicBool, waker: &Waker) {
    let mut buffer = vec![0u8; 16 * 1024];
    loop {
        let stopping = stop.load(Ordering::Relaxed);
        loop {
            match pipe.read(&mut buffer) {
                Ok(0) => break,
                Ok(n) => output.push_bytes(stderr, &buffer[..n]),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            }
        }
        if stopping {
            return;
        }
        if sys::wait_io(pipe.as_raw_fd(), None, waker, Duration::from_secs(1)).is_err() {
            return;
        }
    }
}

impl Drop for Streams {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        self.wakers.iter().for_each(|waker| waker.wake());
        self.readers.clear();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
