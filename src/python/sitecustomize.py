"""Written by debug-mcp first on the debuggee's PYTHONPATH. For `debug-script`
(DEBUG_MCP_TRACE set): starts the line probes of debug_mcp_trace.py, in this process and, as
they inherit the environment, in every Python process it starts. For a debugpy session: turns
on TCP_NODELAY for TCP sockets the process connects (pydevd's socket to debugpy's adapter lacks
it, so each small write waits for a delayed ACK: ~40 ms a request, measured), and when the tool
was given `stdin`, the program's `sys.stdin` reads that text (debugpy's launcher owns the real
one)."""

import os

if "DEBUG_MCP_TRACE" in os.environ:
    try:
        import debug_mcp_trace

        debug_mcp_trace.start()
    except Exception as error:  # never the program's failure
        import sys

        sys.stderr.write("debug-mcp: the line probes did not start: %r\n" % (error,))

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


def _stdin():
    text = os.environ.pop("DEBUG_MCP_STDIN", None)
    if text is not None:
        import base64
        import io
        import sys

        sys.stdin = io.TextIOWrapper(io.BytesIO(base64.b64decode(text)), encoding="utf-8")


_stdin()
