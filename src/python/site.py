"""debug_mcp_site, run by debug-mcp's sitecustomize.py (first on the debuggee's PYTHONPATH). For
a session (DEBUG_MCP_DAP set): starts debug-mcp's debugger in the program
(debug_mcp_session.py). For `debug-script`
(DEBUG_MCP_TRACE set): starts the line probes of debug_mcp_trace.py, in this process and, as
they inherit the environment, in every Python process it starts. For a debugpy session: turns
on TCP_NODELAY for TCP sockets the process connects (pydevd's socket to debugpy's adapter lacks
it, so each small write waits for a delayed ACK: ~40 ms a request, measured), shortens pydevd's
wait at exit, and when the tool was given `stdin`, the program's `sys.stdin` reads that text
(debugpy's launcher owns the real one)."""

import os

from sitecustomize import load_own

if "DEBUG_MCP_DAP" in os.environ:
    try:
        load_own("debug_mcp_probe")
        load_own("debug_mcp_stops")
        load_own("debug_mcp_session").start()
    except Exception as error:  # never the program's failure
        import sys

        sys.stderr.write("debug-mcp: the debugger did not start: %r\n" % (error,))
elif "DEBUG_MCP_TRACE" in os.environ:
    try:
        load_own("debug_mcp_probe")
        debug_mcp_trace = load_own("debug_mcp_trace")
        debug_mcp_trace.start()
    except Exception as error:  # never the program's failure
        import sys

        sys.stderr.write("debug-mcp: the line probes did not start: %r\n" % (error,))

def _nodelay():
    import socket

    connect = socket.socket.connect

    def connect_nodelay(self, *args, **kwargs):
        result = connect(self, *args, **kwargs)
        try:
            if self.type == socket.SOCK_STREAM and self.family in (socket.AF_INET, socket.AF_INET6):
                self.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass
        return result

    socket.socket.connect = connect_nodelay


# Only a session's program talks to pydevd (`debug-script` has no socket to speed up, and
# importing socket would cost its start).
if os.environ.get("DEBUG_MCP_SESSION"):
    _nodelay()


def _pydevd_exits_sooner():
    """In a session (DEBUG_MCP_SESSION), pydevd's shutdown at exit waits up to half a second
    for its reader thread, which only ends when debugpy's adapter closes the connection it does
    not close: the program's process lived 0.5 s past its end (measured). The wait is cut to
    50 ms once pydevd is imported (its writer has long flushed by then)."""
    import sys

    class Patch:
        @classmethod
        def find_spec(cls, name, path=None, target=None):
            if name != "pydevd":
                return None
            sys.meta_path.remove(cls)
            import importlib.util

            spec = importlib.util.find_spec(name)
            loader = getattr(spec, "loader", None)
            if loader is None or not hasattr(loader, "exec_module"):
                return spec
            exec_module = loader.exec_module

            def patched(module):
                exec_module(module)
                try:
                    dispose = module.PyDB.dispose_and_kill_all_pydevd_threads
                    if dispose.__defaults__ == (True, 0.5):
                        dispose.__defaults__ = (True, 0.05)
                except Exception:
                    pass

            loader.exec_module = patched
            return spec

    sys.meta_path.insert(0, Patch)


if os.environ.get("DEBUG_MCP_SESSION") and "pydevd" not in __import__("sys").modules:
    _pydevd_exits_sooner()


def _stdin():
    text = os.environ.pop("DEBUG_MCP_STDIN", None)
    if text is not None:
        import base64
        import io
        import sys

        sys.stdin = io.TextIOWrapper(io.BytesIO(base64.b64decode(text)), encoding="utf-8")


_stdin()
