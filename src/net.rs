//! Addresses of debuggers on this machine or on hosts the user allowed, and who is at the other
//! end of a loopback connection.

/// Whether a host names this machine (`127.x.x.x`, `localhost`, `::1`).
pub(crate) fn is_loopback(host: &str) -> bool {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    bare == "localhost"
        || bare == "::1"
        || bare.parse::<std::net::Ipv4Addr>().is_ok_and(|ip| ip.is_loopback())
}

/// The first address `host:port` resolves to. Address literals and `localhost` need no
/// resolver: a static binary's glibc can only reach the system's name services (even
/// /etc/hosts) through the shared libraries of its own version, which another Linux may lack.
pub(crate) fn socket_address(host: &str, port: u16) -> Result<std::net::SocketAddr, String> {
    use std::net::{IpAddr, Ipv4Addr, SocketAddr, ToSocketAddrs};
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    if bare.eq_ignore_ascii_case("localhost") {
        return Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port));
    }
    if let Ok(ip) = bare.parse::<IpAddr>() {
        return Ok(SocketAddr::new(ip, port));
    }
    let authority = format!("{host}:{port}");
    authority
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {authority}: {e}"))?
        .next()
        .ok_or_else(|| format!("cannot resolve {authority}"))
}

/// Whether this system says which user made a TCP connection on this machine (Linux:
/// /proc/net/tcp).
pub(crate) const PEERS_KNOWN: bool = cfg!(target_os = "linux");

/// The user whose process made the loopback connection `stream` accepted: the owner of the
/// peer's socket, the one whose local address is our peer's and whose remote address is ours.
/// TCP has no SO_PEERCRED: the kernel's socket diagnostics are asked (`sys::tcp_socket_owner`),
/// or, where they do not answer, /proc/net/tcp and tcp6 read, which list every socket of this
/// network namespace with its owner (as identd reads them).
pub(crate) fn peer_user(stream: &std::net::TcpStream) -> Result<u32, String> {
    let (ours, theirs) = (
        stream.local_addr().map_err(|e| e.to_string())?,
        stream.peer_addr().map_err(|e| e.to_string())?,
    );
    if let Ok(uid) = crate::sys::tcp_socket_owner(theirs, ours) {
        return Ok(uid);
    }
    let same = |listed: &str, address: std::net::SocketAddr| {
        proc_address(listed).is_some_and(|(ip, port)| {
            port == address.port() && ip.to_canonical() == address.ip().to_canonical()
        })
    };
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(table) else { continue };
        for line in text.lines().skip(1) {
            let fields: Vec<&str> = line.split_whitespace().collect();
            if fields.len() > 7 && same(fields[1], theirs) && same(fields[2], ours) {
                return fields[7].parse().map_err(|_| format!("{table}: bad uid {}", fields[7]));
            }
        }
    }
    Err(format!("no socket of {theirs} connected to {ours} in /proc/net/tcp"))
}

/// Why the process at the other end of `stream` may not be served as this user's own: another
/// user's, or one nobody can tell (`None` where this system does not say: see [`PEERS_KNOWN`]).
pub(crate) fn peer_is_another_user(stream: &std::net::TcpStream) -> Option<String> {
    if !PEERS_KNOWN {
        return None;
    }
    match peer_user(stream) {
        Ok(uid) if uid == crate::sys::effective_uid() => None,
        Ok(uid) => Some(format!("a process of user {uid}, not of this server's user")),
        Err(e) => Some(format!("its user is unknown ({e})")),
    }
}

/// An address as /proc/net/tcp writes it: the address's bytes as 32-bit words in this
/// machine's byte order, in hex (`0100007F:1F90` is 127.0.0.1:8080 on x86), then the port.
fn proc_address(text: &str) -> Option<(std::net::IpAddr, u16)> {
    let (ip, port) = text.split_once(':')?;
    let port = u16::from_str_radix(port, 16).ok()?;
    let word =
        |i: usize| u32::from_str_radix(ip.get(i * 8..i * 8 + 8)?, 16).ok().map(u32::to_ne_bytes);
    let ip = match ip.len() {
        8 => std::net::IpAddr::from(word(0)?),
        32 => {
            let mut bytes = [0u8; 16];
            for i in 0..4 {
                bytes[i * 4..i * 4 + 4].copy_from_slice(&word(i)?);
            }
            std::net::IpAddr::from(bytes)
        }
        _ => return None,
    };
    Some((ip, port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_loopback_peer_is_known_by_its_socket() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (accepted, _) = listener.accept().unwrap();
        if PEERS_KNOWN {
            let ours = (accepted.peer_addr().unwrap(), accepted.local_addr().unwrap());
            assert_eq!(
                crate::sys::tcp_socket_owner(ours.0, ours.1).unwrap(),
                crate::sys::effective_uid()
            );
            assert_eq!(peer_user(&accepted), Ok(crate::sys::effective_uid()));
            assert_eq!(peer_is_another_user(&accepted), None);
        }
        drop(client);
        if cfg!(target_endian = "little") {
            let loopback = std::net::IpAddr::from([127, 0, 0, 1]);
            assert_eq!(proc_address("0100007F:1F90"), Some((loopback, 8080)));
            let v6 = "00000000000000000000000001000000:0050";
            assert_eq!(proc_address(v6), Some(("::1".parse().unwrap(), 80)));
        }
    }
}
