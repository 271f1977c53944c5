//! The stdin reader thread and the stdout writer thread: the only code that touches stdin and
//! stdout. Everything else sends [`jsonrpc::Message`]s to the writer through a channel.
//!
//! The reader splits stdin into lines and parses each one, so a malformed line becomes a ready
//! error response and the main loop never sees raw bytes. The writer serialises, enforces the
//! size limit clients impose on a line, and flushes after every message.

use std::io::{self, Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crossbeam_channel::{Receiver, Sender};

use crate::jsonrpc::{self, Message, Response};
use crate::thread::JoinOnDrop;
use crate::{log, sys};

/// The TypeScript SDK refuses lines over 10 MiB; stay under it with room to spare.
pub(crate) const MAX_LINE: usize = 10 * 1024 * 1024 - 1024;

/// A line longer than this from the client is not a message we could act on; it is discarded
/// (and answered with a parse error) without holding it in memory.
const MAX_INPUT_LINE: usize = 64 * 1024 * 1024;

/// What the reader thread sends: a parsed message, or the error response for a bad line.
pub(crate) type Incoming = Result<Message, Response>;

/// Starts the stdin reader. The channel closes at end of input. The reader polls, so setting
/// `stop` ends it within [`POLL`] even while stdin stays open (shutdown on a signal).
pub(crate) fn reader(stop: Arc<AtomicBool>) -> (Receiver<Incoming>, JoinOnDrop) {
    let (sender, receiver) = crossbeam_channel::unbounded();
    let thread = JoinOnDrop::spawn("stdin", move || {
        if let Err(e) = read_lines(&sender, &stop) {
            log::error(format_args!("reading stdin failed: {e}"));
        }
    });
    (receiver, thread)
}

const POLL: Duration = Duration::from_millis(100);

fn read_lines(sender: &Sender<Incoming>, stop: &AtomicBool) -> io::Result<()> {
    let stdin = io::stdin();
    let mut stdin = stdin.lock();
    let mut pending: Vec<u8> = Vec::new();
    let mut discarding = false;
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        if stop.load(Ordering::Relaxed) {
            return Ok(());
        }
        if !sys::wait_readable(&io::stdin(), POLL)? {
            continue;
        }
        let n = match stdin.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let mut rest = &chunk[..n];
        while let Some(newline) = rest.iter().position(|&b| b == b'\n') {
            if discarding {
                discarding = false;
            } else {
                pending.extend_from_slice(&rest[..newline]);
                dispatch(sender, &pending);
            }
            pending.clear();
            rest = &rest[newline + 1..];
        }
        if !discarding {
            pending.extend_from_slice(rest);
            if pending.len() > MAX_INPUT_LINE {
                pending = Vec::new();
                discarding = true;
                let message = format!("parse error: line longer than {MAX_INPUT_LINE} bytes");
                let _ = sender.send(Err(Response::err(None, jsonrpc::PARSE_ERROR, message)));
            }
        }
    }
    if !discarding {
        dispatch(sender, &pending);
    }
    Ok(())
}

fn dispatch(sender: &Sender<Incoming>, line: &[u8]) {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return;
    }
    log::debug(format_args!("<- {}", String::from_utf8_lossy(line)));
    let _ = sender.send(jsonrpc::parse(line));
}

/// Starts the stdout writer. It ends, after writing everything queued, when every sender is
/// dropped.
pub(crate) fn writer() -> (Sender<Message>, JoinOnDrop) {
    let (sender, receiver) = crossbeam_channel::unbounded::<Message>();
    let thread = JoinOnDrop::spawn("stdout", move || {
        let stdout = io::stdout();
        let mut stdout = stdout.lock();
        for message in receiver.iter() {
            let mut line = message.to_line();
            if line.len() > MAX_LINE {
                let Some(replacement) = oversized(&message, line.len()) else {
                    continue;
                };
                line = replacement;
            }
            // A large answer is held once, not twice (the message and its line), and its
            // newline is written on its own rather than grow the line's buffer.
            drop(message);
            log::debug(format_args!("-> {}", log::clip(&line)));
            let written = stdout.write_all(line.as_bytes()).and_then(|()| stdout.write_all(b"\n"));
            if let Err(e) = written.and_then(|()| stdout.flush()) {
                // The client is gone; keep draining so senders never block, but stop writing.
                log::error(format_args!("writing stdout failed: {e}"));
                for _ in receiver.iter() {}
                return;
            }
        }
    });
    (sender, thread)
}

/// The line that replaces a message too large for clients to read: an error response for a
/// response; a notification is dropped with a log line instead.
fn oversized(message: &Message, len: usize) -> Option<String> {
    let text = format!(
        "internal error: the answer was {len} bytes, over the {MAX_LINE}-byte limit of a message"
    );
    match message {
        Message::Response(r) => Some(
            Message::from(Response::err(r.id.clone(), jsonrpc::INTERNAL_ERROR, text)).to_line(),
        ),
        _ => {
            log::error(format_args!("dropped an outgoing message: {text}"));
            None
        }
    }
}

/// Prints text for the command-line face (`--help`, `run`); never used while serving MCP.
pub(crate) fn print(text: &str) {
    let mut stdout = io::stdout().lock();
    let _ = stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush());
}
