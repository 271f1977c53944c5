//! Addresses of debuggers on this machine or on hosts the user allowed.

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
