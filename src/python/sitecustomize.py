"""Written by debug-mcp first on the debuggee's PYTHONPATH: turns on TCP_NODELAY for TCP
sockets the process connects. pydevd's socket to debugpy's adapter lacks it, so each small
write waits for a delayed ACK (~40 ms a request, measured)."""

import socket

_connect = socket.socket.connect


def _connect_nodelay(self, *args, **kwargs):
    result = _connect(self, *args, **kwargs)
    try:
        if self.type == socket.SOCK_STREAM and self.family in (socket.AF_INET, socket.AF_INET6):
            self.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    except OSError:
        pass
    return result


socket.socket.connect = _connect_nodelay
