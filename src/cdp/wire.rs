//! What a CDP connection's messages travel on: a WebSocket (an inspector's port: Node's, Deno's,
//! a browser the user started), or a pair of pipes (a browser we start, with
//! `--remote-debugging-pipe`: it reads requests on its descriptor 3 and writes on its 4, each
//! message JSON ended by a NUL byte). A pipe opens no port: no other user can reach the browser.
//!
//! Both are non-blocking: the connection's thread (`cdp::pump`) queues what it sends, writes
//! what there is room for, reads what arrived, and sleeps in poll(2) until either side has more.

use std::fs::File;
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::fd::{AsRawFd, OwnedFd};
use std::time::Duration;

use tungstenite::{Message, WebSocket};

use crate::sys;

pub(crate) enum Wire {
    Socket(WebSocket<TcpStream>),
    Pipe(Pipe),
}

/// Our ends of a browser's pipes.
pub(crate) struct Pipe {
    to: File,
    from: File,
    /// Queued and not yet written.
    unsent: Vec<u8>,
    /// Read and not yet split into messages; the part before `scanned` holds no NUL.
    received: Vec<u8>,
    scanned: usize,
}

impl Pipe {
    /// Our ends (non-blocking): the one the browser reads, the one it writes.
    pub(crate) fn new(to: OwnedFd, from: OwnedFd) -> Pipe {
        Pipe {
            to: File::from(to),
            from: File::from(from),
            unsent: Vec::new(),
            received: Vec::new(),
            scanned: 0,
        }
    }

    /// The next whole message read so far, if one is.
    fn take_message(&mut self) -> Option<Result<String, String>> {
        let end = self.received[self.scanned..].iter().position(|&b| b == 0)? + self.scanned;
        let rest = self.received.split_off(end + 1);
        let mut message = std::mem::replace(&mut self.received, rest);
        message.pop();
        self.scanned = 0;
        Some(
            String::from_utf8(message)
                .map_err(|_| "the browser sent a message that is not UTF-8".into()),
        )
    }
}

fn would_block(e: &tungstenite::Error) -> bool {
    matches!(e, tungstenite::Error::Io(e) if e.kind() == io::ErrorKind::WouldBlock)
}

impl Wire {
    /// Queues `text`; `flush` writes it.
    pub(crate) fn send(&mut self, text: String) -> Result<(), String> {
        match self {
            // WouldBlock means queued in tungstenite's buffer; the flush goes on.
            Wire::Socket(socket) => match socket.write(Message::text(text)) {
                Err(e) if !would_block(&e) => Err(format!("write failed: {e}")),
                _ => Ok(()),
            },
            Wire::Pipe(pipe) => {
                pipe.unsent.extend_from_slice(text.as_bytes());
                pipe.unsent.push(0);
                Ok(())
            }
        }
    }

    /// Writes what is queued, as far as there is room; whether some still waits.
    pub(crate) fn flush(&mut self) -> Result<bool, String> {
        match self {
            Wire::Socket(socket) => match socket.flush() {
                Ok(()) => Ok(false),
                Err(e) if would_block(&e) => Ok(true),
                Err(e) => Err(format!("write failed: {e}")),
            },
            Wire::Pipe(pipe) => {
                while !pipe.unsent.is_empty() {
                    match pipe.to.write(&pipe.unsent) {
                        Ok(n) => drop(pipe.unsent.drain(..n)),
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(true),
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(e) => return Err(format!("write failed: {e}")),
                    }
                }
                Ok(false)
            }
        }
    }

    /// The next message that has arrived (`None`: nothing more now), or why the connection
    /// ended.
    pub(crate) fn receive(&mut self) -> Result<Option<String>, String> {
        match self {
            Wire::Socket(socket) => loop {
                match socket.read() {
                    Ok(Message::Text(text)) => return Ok(Some(text.as_str().to_string())),
                    Ok(Message::Close(_)) => return Err("closed by the inspector".into()),
                    Ok(_) => {}
                    Err(e) if would_block(&e) => return Ok(None),
                    Err(e) => return Err(e.to_string()),
                }
            },
            Wire::Pipe(pipe) => loop {
                if let Some(message) = pipe.take_message() {
                    return message.map(Some);
                }
                pipe.scanned = pipe.received.len();
                let mut chunk = [0u8; 64 * 1024];
                match pipe.from.read(&mut chunk) {
                    Ok(0) => return Err("closed by the browser".into()),
                    Ok(n) => pipe.received.extend_from_slice(&chunk[..n]),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(None),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e.to_string()),
                }
            },
        }
    }

    /// Sleeps until there is something to read, room to write (when `want_write`), the waker
    /// is poked, or `timeout` passes.
    pub(crate) fn wait(
        &self,
        want_write: bool,
        waker: &sys::Waker,
        timeout: Duration,
    ) -> io::Result<()> {
        match self {
            Wire::Socket(socket) => {
                // Node's inspector lacks TCP_NODELAY: see `sys::quick_ack`.
                sys::quick_ack(socket.get_ref());
                let fd = socket.get_ref().as_raw_fd();
                sys::wait_io(fd, want_write.then_some(fd), waker, timeout)
            }
            Wire::Pipe(pipe) => {
                let write = want_write.then(|| pipe.to.as_raw_fd());
                sys::wait_io(pipe.from.as_raw_fd(), write, waker, timeout)
            }
        }
    }

    /// Says goodbye (a WebSocket's close frame; a pipe just closes when dropped).
    pub(crate) fn close(&mut self) {
        if let Wire::Socket(socket) = self {
            let _ = socket.close(None);
            let _ = socket.flush();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pipe_messages_end_at_nul_bytes_however_they_arrive() {
        let (our_write, its_read, our_read, its_write) = sys::pipes_for_child().unwrap();
        let mut wire = Wire::Pipe(Pipe::new(our_write, our_read));
        let (mut browser_in, mut browser_out) = (File::from(its_read), File::from(its_write));
        assert_eq!(wire.receive(), Ok(None));
        browser_out.write_all(b"{\"id\":1}\0{\"id\"").unwrap();
        assert_eq!(wire.receive(), Ok(Some("{\"id\":1}".into())));
        assert_eq!(wire.receive(), Ok(None));
        browser_out.write_all(b":2}\0").unwrap();
        assert_eq!(wire.receive(), Ok(Some("{\"id\":2}".into())));
        wire.send("{\"id\":3}".into()).unwrap();
        assert_eq!(wire.flush(), Ok(false));
        let mut sent = [0u8; 9];
        browser_in.read_exact(&mut sent).unwrap();
        assert_eq!(&sent, b"{\"id\":3}\0");
        drop(browser_out);
        assert!(wire.receive().unwrap_err().contains("closed"));
    }
}
