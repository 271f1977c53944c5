//! How an adapter we start is reached, so that nobody else reaches it: over its stdin and
//! stdout (lldb-dap, gdb); over a connection it makes to a loopback port of ours, taken only
//! from a process of our own user (Delve: `dlv dap --client-addr`, since its `--listen` port,
//! though it refuses other users, let another user's racing connection break the launch); over
//! a Unix socket in our private directory (`${socket}`: rdbg's `--sock-path`); or, when a
//! configured adapter can only listen on a port (`${port}`), that port, which any local user
//! can reach first (docs/security.md says so).

use std::net::TcpListener;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{said, Native};
use crate::dap::Client;
use crate::debugger::{Code, Failure};
use crate::process::{self, Debuggee};

/// How long an adapter may take to connect or listen (Delve builds the program first).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(60);

#[derive(Clone, Copy)]
pub(crate) enum Connect {
    Stdio,
    /// It connects to a loopback port of ours given as `--client-addr=127.0.0.1:PORT`.
    Dials,
    /// On a Unix socket it makes at `${socket}`, in a private directory of ours.
    Unix,
    /// On the port we chose for it (`${port}`).
    Tcp(u16),
}

/// Where `${socket}` is, in a directory of `dir`.
fn socket_in(dir: &Path) -> String {
    dir.join("dap.sock").display().to_string()
}

/// `${socket}` in `value`'s strings made `path`.
pub(crate) fn with_socket(value: &Value, path: &str) -> Value {
    match value {
        Value::String(text) => Value::String(text.replace("${socket}", path)),
        Value::Array(items) => Value::Array(items.iter().map(|v| with_socket(v, path)).collect()),
        Value::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| (k.clone(), with_socket(v, path))).collect())
        }
        other => other.clone(),
    }
}

impl Native {
    /// Starts the adapter `spec` describes and connects to it; `arguments` (its launch or
    /// attach request's) get the socket's path too.
    pub(super) fn spawn_connected(
        &self,
        mut spec: process::Spec,
        arguments: &mut Value,
    ) -> Result<(Debuggee, Client), Failure> {
        let connect = self.0.connect;
        if let Connect::Stdio = connect {
            let (adapter, stdin, stdout) =
                Debuggee::spawn_adapter(&spec).map_err(|e| self.spawn_failure(e))?;
            return Ok((adapter, Client::new(stdin, stdout)));
        }
        let mut socket = None;
        let mut listener = None;
        match connect {
            Connect::Unix => {
                let dir = crate::scratch::private_dir("adapter").map_err(|e| {
                    Failure::new(
                        Code::SpawnFailed,
                        format!("cannot make the adapter's directory: {e}"),
                    )
                })?;
                let path = socket_in(&dir);
                spec.args = spec.args.iter().map(|a| a.replace("${socket}", &path)).collect();
                *arguments = with_socket(arguments, &path);
                socket = Some(dir);
            }
            Connect::Dials => {
                let bound = TcpListener::bind("127.0.0.1:0")
                    .and_then(|l| Ok((l.local_addr()?, l)))
                    .map_err(|e| {
                        Failure::new(Code::SpawnFailed, format!("no loopback port: {e}"))
                    })?;
                spec.args.push(format!("--client-addr={}", bound.0));
                listener = Some(bound.1);
            }
            Connect::Stdio | Connect::Tcp(_) => {}
        }
        let mut adapter = Debuggee::spawn(&spec, |_| false).map_err(|e| {
            if let Some(dir) = &socket {
                let _ = std::fs::remove_dir_all(dir);
            }
            self.spawn_failure(e)
        })?;
        let path = socket.map(|dir| {
            let path = socket_in(&dir);
            adapter.remove_when_gone(dir);
            path
        });
        match self.reach(&mut adapter, listener.as_ref(), path.as_deref()) {
            Ok(client) => Ok((adapter, client)),
            Err(failure) => {
                adapter.kill();
                Err(failure)
            }
        }
    }

    /// Waits for the adapter to connect to `listener`, or for its socket at `path` or its port
    /// to take a connection, and makes the client.
    fn reach(
        &self,
        adapter: &mut Debuggee,
        listener: Option<&TcpListener>,
        path: Option<&str>,
    ) -> Result<Client, Failure> {
        let deadline = Instant::now() + CONNECT_TIMEOUT;
        if let Some(listener) = listener {
            listener
                .set_nonblocking(true)
                .map_err(|e| Failure::new(Code::Internal, e.to_string()))?;
        }
        loop {
            // A configured adapter may say when it is ready for its client (rdbg 1.4 runs the
            // whole script when one connects before it waits for one).
            let ready = self.0.ready.as_deref().is_none_or(|ready| {
                let (out, err, ..) = adapter.output().since(0, 0);
                out.contains(ready) || err.contains(ready)
            });
            let client = match (listener, path, self.0.connect) {
                (Some(listener), ..) => match listener.accept() {
                    Ok((stream, peer)) => match crate::net::peer_is_another_user(&stream) {
                        None => Some(
                            stream.set_nonblocking(false).and_then(|()| Client::over_tcp(stream)),
                        ),
                        Some(why) => {
                            crate::log::warn(format_args!(
                                "{}: refused a connection from {peer} ({why}): it is not ours",
                                self.0.name
                            ));
                            None
                        }
                    },
                    Err(_) => None,
                },
                (None, Some(path), _) if ready => std::os::unix::net::UnixStream::connect(path)
                    .ok()
                    .map(|stream| Client::over_unix(stream, None)),
                (None, None, Connect::Tcp(port)) if ready => {
                    let address = std::net::SocketAddr::from(([127, 0, 0, 1], port));
                    Client::connect(address, Duration::from_secs(2)).ok().map(Ok)
                }
                _ => None,
            };
            if let Some(client) = client {
                return client.map_err(|e| {
                    Failure::new(Code::AdapterFailed, format!("{}: {e}", self.0.name))
                });
            }
            if let Some(exit) = adapter.try_exit() {
                let said = said(adapter);
                return Err(Failure::new(
                    Code::AdapterFailed,
                    format!(
                        "{} ended ({}) before it took its connection: {said}",
                        self.0.name,
                        exit.describe()
                    ),
                ));
            }
            if Instant::now() > deadline {
                return Err(Failure::new(
                    Code::AdapterFailed,
                    format!(
                        "{} did not connect within {}s",
                        self.0.name,
                        CONNECT_TIMEOUT.as_secs()
                    ),
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_socket_is_put_in_every_string() {
        let value = json!({"a": ["--sock-path=${socket}", 1], "b": "${socket}", "c": null});
        assert_eq!(
            with_socket(&value, "/s/dap.sock"),
            json!({"a": ["--sock-path=/s/dap.sock", 1], "b": "/s/dap.sock", "c": null})
        );
    }
}
