//! One HTTP request: read within its deadline, and checked to be what it claims before anything
//! acts on it (its `Host`, its `Origin`, what it sends and accepts); answers written back.
//!
//! What a request must show, and why (MCP's Streamable HTTP transport, 2025-11-25 and
//! 2026-07-28, "Security Warning"; RFC 6454 for `Origin`):
//! - `Host` names this server: a loopback name or address, the address it is bound to, or a
//!   name the operator allowed. A web page whose own name was re-pointed at 127.0.0.1 (DNS
//!   rebinding) sends its own name.
//! - `Origin`, when a browser sends one, is exactly one serialized origin (`scheme://host[:port]`,
//!   nothing else) of this machine or an allowed host; `http://localhost:80@evil.com` is a URL
//!   of evil.com, and is refused, as is a second `Origin`.
//! - A POST sends `Content-Type: application/json` and accepts both `application/json` and
//!   `text/event-stream`: a page can send a "simple" request (`text/plain`, no preflight) to any
//!   port, but never this one, which a browser only sends after a preflight we do not answer.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{IpAddr, TcpStream};
use std::time::{Duration, Instant};

/// The largest head (request line and headers) and body a request may have.
const HEAD_MAX: usize = 16 * 1024;
pub(crate) const BODY_MAX: usize = 4 * 1024 * 1024;
/// How long a request may take to arrive, from its first byte to its body's last, however
/// slowly it trickles in.
const REQUEST_DEADLINE: Duration = Duration::from_secs(10);

/// One HTTP request, as read.
pub(crate) struct Request {
    pub(crate) method: String,
    pub(crate) path: String,
    headers: Vec<(String, String)>,
    pub(crate) body: Vec<u8>,
}

impl Request {
    /// The header `name`'s value, when it is given once.
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    fn count(&self, name: &str) -> usize {
        self.headers.iter().filter(|(n, _)| n.eq_ignore_ascii_case(name)).count()
    }
}

/// Why a request is not served: the status to answer and why, or nothing (the client left).
#[derive(Debug, PartialEq)]
pub(crate) enum Refused {
    Status(u16, &'static str),
    Gone,
}

/// A connection's reads, each given what is left of a deadline (or, between requests, of the
/// idle wait): a request that trickles in a byte at a time still ends at its deadline.
pub(crate) struct Reads {
    stream: TcpStream,
    until: Instant,
}

impl Reads {
    pub(crate) fn new(stream: TcpStream) -> Reads {
        Reads { stream, until: Instant::now() }
    }
}

impl Read for Reads {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = self.until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::ErrorKind::TimedOut.into());
        }
        self.stream.set_read_timeout(Some(left))?;
        self.stream.read(buf)
    }
}

/// Reads the next request: its first byte within `idle` (else the connection is let go), the
/// rest within [`REQUEST_DEADLINE`] of it.
pub(crate) fn read(reader: &mut BufReader<Reads>, idle: Duration) -> Result<Request, Refused> {
    reader.get_mut().until = Instant::now() + idle;
    match reader.fill_buf() {
        Ok([]) | Err(_) => return Err(Refused::Gone),
        Ok(_) => {}
    }
    reader.get_mut().until = Instant::now() + REQUEST_DEADLINE;
    let late = |e: io::Error| match e.kind() {
        io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => {
            Refused::Status(408, "the request did not arrive in time")
        }
        _ => Refused::Gone,
    };
    let mut head = Vec::new();
    loop {
        let mut line = Vec::new();
        let limit = (HEAD_MAX + 1 - head.len()) as u64;
        match reader.by_ref().take(limit).read_until(b'\n', &mut line) {
            Ok(0) => return Err(Refused::Gone),
            Ok(_) => {}
            Err(e) => return Err(late(e)),
        }
        if head.len() + line.len() > HEAD_MAX {
            return Err(Refused::Status(431, "request headers too large"));
        }
        let blank = line == b"\r\n" || line == b"\n";
        head.extend_from_slice(&line);
        if blank && head.len() > line.len() {
            break;
        }
        if blank {
            head.clear(); // a stray empty line before a request
        }
    }
    let mut request = parse_head(&head)?;
    if request.header("transfer-encoding").is_some() {
        return Err(Refused::Status(411, "send the body with a Content-Length"));
    }
    let length: usize = match (request.count("content-length"), request.header("content-length")) {
        (0, _) => 0,
        (1, Some(n)) => n.parse().map_err(|_| Refused::Status(400, "bad Content-Length"))?,
        _ => return Err(Refused::Status(400, "more than one Content-Length")),
    };
    if length > BODY_MAX {
        return Err(Refused::Status(413, "request body too large"));
    }
    request.body.resize(length, 0);
    reader.read_exact(&mut request.body).map_err(late)?;
    Ok(request)
}

fn parse_head(head: &[u8]) -> Result<Request, Refused> {
    let text =
        std::str::from_utf8(head).map_err(|_| Refused::Status(400, "headers are not UTF-8"))?;
    let mut lines = text.lines();
    let mut first = lines.next().unwrap_or_default().split(' ');
    let (method, path) = (first.next().unwrap_or_default(), first.next().unwrap_or_default());
    let mut headers = Vec::new();
    for line in lines.filter(|l| !l.is_empty()) {
        let (name, value) =
            line.split_once(':').ok_or(Refused::Status(400, "a header line without a colon"))?;
        headers.push((name.trim().to_string(), value.trim().to_string()));
    }
    Ok(Request { method: method.into(), path: path.into(), headers, body: Vec::new() })
}

/// Who this server is to its clients: the names a request's `Host` and `Origin` may carry.
pub(crate) struct Names {
    /// The address it is bound to.
    bound: IpAddr,
    /// Host names the operator allowed (`--allowed-host`), lowercase.
    allowed: Vec<String>,
}

impl Names {
    pub(crate) fn new(bound: IpAddr, allowed: Vec<String>) -> Names {
        Names { bound, allowed: allowed.into_iter().map(|h| h.to_ascii_lowercase()).collect() }
    }

    /// Whether `host` (a name or address, without port or brackets) is this server's: a
    /// loopback one, the address it is bound to (any address literal when it is bound to all),
    /// or an allowed name. An address literal cannot be re-pointed, as a name can.
    fn is_ours(&self, host: &str) -> bool {
        let host = host.to_ascii_lowercase();
        if host == "localhost" || self.allowed.contains(&host) {
            return true;
        }
        match host.parse::<IpAddr>() {
            Ok(ip) => ip.is_loopback() || ip == self.bound || self.bound.is_unspecified(),
            Err(_) => false,
        }
    }

    /// Checks `Host` and `Origin`.
    pub(crate) fn check(&self, request: &Request) -> Result<(), Refused> {
        match (request.count("host"), request.header("host")) {
            (1, Some(host)) => match split_authority(host) {
                Some(name) if self.is_ours(name) => {}
                _ => {
                    return Err(Refused::Status(
                        403,
                        "Host not allowed: this server is not that host",
                    ))
                }
            },
            (0, _) => return Err(Refused::Status(400, "a Host header is required")),
            _ => return Err(Refused::Status(400, "more than one Host header")),
        }
        match (request.count("origin"), request.header("origin")) {
            (0, _) => Ok(()),
            (1, Some(origin)) if origin_host(origin).is_some_and(|h| self.is_ours(h)) => Ok(()),
            (1, _) => Err(Refused::Status(
                403,
                "Origin not allowed: only pages served from this machine may call",
            )),
            _ => Err(Refused::Status(403, "more than one Origin header")),
        }
    }
}

/// The host of `host[:port]` (`[v6]:port` too), or `None` when it is not one.
fn split_authority(authority: &str) -> Option<&str> {
    let (host, port) = match authority.strip_prefix('[') {
        Some(v6) => {
            let (host, rest) = v6.split_once(']')?;
            host.parse::<std::net::Ipv6Addr>().ok()?;
            (host, rest.strip_prefix(':'))
        }
        None => match authority.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        },
    };
    let port_ok =
        port.is_none_or(|p| !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit()));
    let host_ok = !host.is_empty()
        && host.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b':'));
    (port_ok && host_ok).then_some(host)
}

/// The host of a serialized origin (`http://localhost:5173`), or `None` when `origin` is not
/// exactly one: a path, user information, a query or another scheme make it something else.
fn origin_host(origin: &str) -> Option<&str> {
    let (scheme, authority) = origin.split_once("://")?;
    if !matches!(scheme.to_ascii_lowercase().as_str(), "http" | "https") {
        return None;
    }
    split_authority(authority)
}

/// Whether a POST says it sends JSON and takes both answers the transport gives: a JSON
/// object or an event stream.
pub(crate) fn check_post(request: &Request) -> Result<(), Refused> {
    let kind = request.header("content-type").unwrap_or_default();
    let essence = kind.split(';').next().unwrap_or_default().trim();
    if request.count("content-type") != 1 || !essence.eq_ignore_ascii_case("application/json") {
        return Err(Refused::Status(415, "send Content-Type: application/json"));
    }
    let accepted: Vec<String> = request
        .headers
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case("accept"))
        .flat_map(|(_, v)| v.split(','))
        .map(|range| range.split(';').next().unwrap_or_default().trim().to_ascii_lowercase())
        .collect();
    let takes = |kind: &str| {
        let family = format!("{}/*", kind.split('/').next().unwrap_or_default());
        accepted.iter().any(|a| a == kind || a == "*/*" || *a == family)
    };
    if !takes("application/json") || !takes("text/event-stream") {
        return Err(Refused::Status(
            406,
            "send Accept: application/json, text/event-stream (MCP's Streamable HTTP asks both)",
        ));
    }
    Ok(())
}

/// Compares without stopping at the first difference (a token's bytes are not guessable from
/// how long a refusal takes).
pub(crate) fn same(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        202 => "Accepted",
        204 => "No Content",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        408 => "Request Timeout",
        411 => "Length Required",
        413 => "Content Too Large",
        415 => "Unsupported Media Type",
        431 => "Request Header Fields Too Large",
        _ => "Service Unavailable",
    }
}

pub(crate) fn respond(
    stream: &TcpStream,
    status: u16,
    headers: &[(&str, &str)],
    text: &str,
) -> io::Result<()> {
    respond_raw(stream, status, headers, "text/plain; charset=utf-8", text.as_bytes())
}

pub(crate) fn respond_raw(
    mut stream: &TcpStream,
    status: u16,
    headers: &[(&str, &str)],
    kind: &str,
    body: &[u8],
) -> io::Result<()> {
    let mut head = format!("HTTP/1.1 {status} {}\r\n", reason(status));
    if status != 204 {
        head.push_str(&format!("Content-Type: {kind}\r\nContent-Length: {}\r\n", body.len()));
    }
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes())?;
    stream.write_all(body)?;
    stream.flush()
}

/// Answers `status` and closes the connection so that the client reads the answer, not a
/// reset: what it still sends is read and dropped for a moment first.
pub(crate) fn refuse(stream: &TcpStream, status: u16, why: &str) {
    let _ = respond(stream, status, &[("Connection", "close")], why);
    let _ = stream.shutdown(std::net::Shutdown::Write);
    let _ = stream.set_read_timeout(Some(Duration::from_millis(500)));
    let _ = io::copy(&mut stream.take(BODY_MAX as u64 * 2), &mut io::sink());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(headers: &[(&str, &str)]) -> Request {
        let headers = headers.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect();
        Request { method: "POST".into(), path: "/mcp".into(), headers, body: Vec::new() }
    }

    #[test]
    fn host_and_origin_name_this_machine_once() {
        let names = Names::new("127.0.0.1".parse().unwrap(), vec!["Dev.Example".into()]);
        let host = |h: &str| names.check(&request(&[("Host", h)]));
        for ok in [
            "127.0.0.1:8765",
            "localhost",
            "LOCALHOST:1",
            "[::1]:8765",
            "127.0.0.2",
            "dev.example:80",
        ] {
            assert_eq!(host(ok), Ok(()), "{ok}");
        }
        for refused in [
            "evil.example",
            "evil.example:8765",
            "10.0.0.5:8765",
            "localhost.evil.example",
            "",
            "a b",
            "[::1",
        ] {
            assert!(matches!(host(refused), Err(Refused::Status(403, _))), "{refused}");
        }
        assert!(matches!(names.check(&request(&[])), Err(Refused::Status(400, _))));
        let twice = request(&[("Host", "localhost"), ("Host", "localhost")]);
        assert!(matches!(names.check(&twice), Err(Refused::Status(400, _))));

        let origin = |o: &[&str]| {
            let mut headers = vec![("Host", "localhost")];
            headers.extend(o.iter().map(|o| ("Origin", *o)));
            names.check(&request(&headers))
        };
        for ok in [
            "http://localhost:5173",
            "http://127.0.0.1",
            "https://[::1]:8443",
            "http://dev.example",
        ] {
            assert_eq!(origin(&[ok]), Ok(()), "{ok}");
        }
        for refused in [
            "http://evil.example",
            "http://localhost.evil.example",
            "http://localhost:80@evil.com",
            "http://localhost/path",
            "http://localhost?x",
            "file://localhost",
            "null",
            "localhost",
        ] {
            assert!(matches!(origin(&[refused]), Err(Refused::Status(403, _))), "{refused}");
        }
        assert!(matches!(
            origin(&["http://localhost", "http://evil.example"]),
            Err(Refused::Status(403, _))
        ));
        // Bound to every address: an address literal is this server, a name only if allowed.
        let all = Names::new("0.0.0.0".parse().unwrap(), Vec::new());
        assert_eq!(all.check(&request(&[("Host", "192.168.1.9:8765")])), Ok(()));
        assert!(all.check(&request(&[("Host", "evil.example")])).is_err());
    }

    #[test]
    fn a_post_sends_json_and_takes_both_answers() {
        let post = |kind: Option<&str>, accept: &[&str]| {
            let mut headers: Vec<(&str, &str)> = accept.iter().map(|a| ("Accept", *a)).collect();
            headers.extend(kind.map(|k| ("Content-Type", k)));
            check_post(&request(&headers)).map_err(|e| match e {
                Refused::Status(status, _) => status,
                Refused::Gone => 0,
            })
        };
        let both = ["application/json, text/event-stream"];
        assert_eq!(post(Some("application/json"), &both), Ok(()));
        assert_eq!(post(Some("Application/JSON; charset=utf-8"), &both), Ok(()));
        assert_eq!(post(Some("application/json"), &["*/*"]), Ok(()));
        assert_eq!(post(Some("application/json"), &["application/*;q=0.9", "text/*"]), Ok(()));
        assert_eq!(post(Some("text/plain"), &both), Err(415));
        assert_eq!(post(None, &both), Err(415));
        assert_eq!(post(Some("application/x-www-form-urlencoded"), &both), Err(415));
        assert_eq!(post(Some("application/json"), &["text/html"]), Err(406));
        assert_eq!(post(Some("application/json"), &["application/json"]), Err(406));
        assert_eq!(post(Some("application/json"), &[]), Err(406));
        assert!(same("abc", "abc") && !same("abc", "abd") && !same("abc", "ab"));
    }
}
