# Runs debugpy's adapter as `python -m debugpy.adapter` does (debug-mcp runs this file, from
# its helper directory, as the script), but taking connections only from processes of this user.
#
# Started on stdio, the adapter still listens on a loopback port for more clients (the sessions
# of child processes it offers with `debugpyAttach`), and those clients are not asked for any
# token: another local user could connect, send `attach` with `debugpyArgs`, and run code as this
# user. Every socket this process accepts (that port, and the one the program's debug server and
# launcher connect to) is checked: the peer's socket, found in /proc/net/tcp by its address and
# ours, must belong to this user; any other connection is closed at once.
import os
import socket
import struct


def _address(field):
    """(address bytes, port) of a /proc/net/tcp address: 32-bit words in host order, in hex."""
    host, port = field.split(":")
    words = [int(host[i : i + 8], 16) for i in range(0, len(host), 8)]
    raw = struct.pack("=%dI" % len(words), *words)
    if raw[:12] == b"\0" * 10 + b"\xff\xff":
        raw = raw[12:]
    return raw, int(port, 16)


def _packed(address):
    host, port = address[0], address[1]
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    raw = socket.inet_pton(family, host.split("%")[0])
    if raw[:12] == b"\0" * 10 + b"\xff\xff":
        raw = raw[12:]
    return raw, port


def _owner(conn):
    """The user whose socket connected to `conn`, or None when nobody can tell."""
    try:
        peer, ours = _packed(conn.getpeername()), _packed(conn.getsockname())
    except (OSError, ValueError):
        return None
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                rows = f.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            if len(fields) > 7 and _address(fields[1]) == peer and _address(fields[2]) == ours:
                return int(fields[7])
    return None


_accept = socket.socket.accept
_known = os.path.exists("/proc/net/tcp")


def _accept_own(self):
    while True:
        conn, address = _accept(self)
        if not _known or conn.family not in (socket.AF_INET, socket.AF_INET6):
            return conn, address
        if _owner(conn) == os.geteuid():
            return conn, address
        conn.close()


socket.socket.accept = _accept_own

import runpy  # noqa: E402

runpy.run_module("debugpy.adapter", run_name="__main__", alter_sys=True)
