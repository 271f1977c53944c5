"""debug-mcp's line probes for a Python program run by `debug-script`: no debugger, only "this
line ran in this frame" and an evaluation there.

sitecustomize.py (first on the program's PYTHONPATH) calls `start()` when DEBUG_MCP_TRACE holds
the plan (Base64 JSON: the probes, the socket to report on, the caps). Every Python process of
the program inherits the environment, so children (subprocess, multiprocessing, pytest-xdist
workers) start the same way; a forked child reconnects. Each process reports on its own
connection to a Unix socket in the server's private scratch directory, one line per message:

    hello   {pid, ppid, argv, python}
    resolved        {probe, line}        the line a probe stops at (the first process only)
    hit     PROBE   [frames] or nothing  F{json} or T{json}: was the value cut, {type, value}

Fields are separated by tabs (JSON escapes a tab in a string, so none is inside one).

The server may write `stop` (the hit cap was reached): it is read at the next hit.

How lines are watched: on CPython 3.12+ with `sys.monitoring` (PEP 669), LINE events enabled
only for the code objects that hold a probed line (found at their PY_START, which is then
disabled for every other code object); before 3.12 with `sys.settrace`, a trace function that
returns a local tracer only for frames of those code objects. A probe's line is resolved as
debugpy resolves a breakpoint's: a line without code moves to the closest line with code before
it (line 0, before any code: nothing can stop there).
"""

import base64
import bisect
import dis
import json
import os
import sys
import threading
import types

import debug_mcp_probe

_plan = None
_sock = None
_send_lock = threading.Lock()
_local = threading.local()
# Per probe: [probe, resolved line or None]; per code object: the probes it holds.
_probes = []
_codes = {}
_files = {}
_hits = 0
_stopped = False
_tool = None


def start():
    global _plan
    text = os.environ.get("DEBUG_MCP_TRACE")
    if not text or _plan is not None:
        return
    try:
        _plan = json.loads(base64.b64decode(text).decode("utf-8"))
    except Exception:
        return
    for probe in _plan["probes"]:
        probe["real"] = os.path.realpath(probe["file"])
        probe["condition_code"] = _compiled(probe.get("condition"))
        probe["expression_code"] = _compiled(probe.get("expression"))
        _probes.append([probe, None])
    _connect()
    # The first Python process resolves the probes' lines now (a line that cannot stop
    # ends the run before the program does anything); the others when a probed file loads.
    if os.environ.pop("DEBUG_MCP_TRACE_RESOLVE", None) is not None:
        for index, entry in enumerate(_probes):
            line = _resolve(entry)
            _send("resolved", json.dumps({"probe": index, "line": line}))
            if line == 0:
                _sock.close()
                os._exit(3)
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=_forked)
    if hasattr(sys, "monitoring"):
        _watch_with_monitoring()
    else:
        _watch_with_settrace()


def _compiled(text):
    """The code of an expression, or the SyntaxError it raises (reported at each hit)."""
    if text is None:
        return None
    try:
        return compile(text, "<string>", "eval")
    except SyntaxError as error:
        return error


def _connect():
    global _sock
    import socket

    _sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    _sock.connect(_plan["socket"])
    try:
        argv = list(sys.orig_argv)
    except AttributeError:
        # Before 3.10; before 3.7 sys.argv is not set yet while site runs.
        argv = [sys.executable] + getattr(sys, "argv", [])
    hello = {"pid": os.getpid(), "ppid": os.getppid(), "argv": argv,
             "python": "%d.%d" % sys.version_info[:2]}
    _send("hello", json.dumps(hello))


def _forked():
    """A forked child has its parent's connection: it reports on a new one of its own."""
    global _send_lock
    _send_lock = threading.Lock()
    try:
        _sock.close()
    except Exception:
        pass
    _connect()


def _send(kind, *fields):
    data = ("\t".join((kind,) + fields) + "\n").encode("utf-8", "replace")
    with _send_lock:
        try:
            _sock.sendall(data)
        except OSError:
            pass


def _code_lines(code):
    """Every line a code object and those nested in it start (as dis.findlinestarts says)."""
    for _, line in dis.findlinestarts(code):
        if line is not None:
            yield line
    for const in code.co_consts:
        if isinstance(const, types.CodeType) and const.co_filename == code.co_filename:
            yield from _code_lines(const)


def _resolve(entry):
    """A probe's line as the file's code has it: the line itself, or the closest line with
    code before it; 0 when none is; None when the file cannot be compiled."""
    probe, line = entry
    if line is not None:
        return line
    try:
        import tokenize

        with tokenize.open(probe["real"]) as f:
            source = f.read()
        code = compile(source, probe["real"], "exec", 0, True)
    except Exception:
        return None
    lines = sorted(set(_code_lines(code)))
    line = probe["line"]
    if line not in lines:
        index = bisect.bisect_left(lines, line)
        if index > 0:
            line = lines[index - 1]
    entry[1] = line
    return line


def _is_probed_file(filename):
    """The probes in this file, by index."""
    found = _files.get(filename)
    if found is None:
        real = os.path.realpath(filename)
        found = tuple(i for i, (probe, _) in enumerate(_probes) if probe["real"] == real)
        _files[filename] = found
    return found


def _probes_in(code):
    """The probes whose line this code object itself runs, by index and line."""
    found = _codes.get(code)
    if found is None:
        found = ()
        indexes = _is_probed_file(code.co_filename)
        if indexes:
            own = set(line for _, line in dis.findlinestarts(code) if line is not None)
            found = tuple((i, _resolve(_probes[i])) for i in indexes
                          if _resolve(_probes[i]) in own)
        _codes[code] = found
    return found


def _hit(index, frame):
    """Evaluates probe `index` in `frame` and reports it."""
    global _hits, _stopped
    if _stopped or getattr(_local, "busy", False):
        return
    _local.busy = True
    try:
        if _server_said_stop():
            _stop()
            return
        probe = _probes[index][0]
        condition = probe["condition_code"]
        if condition is not None:
            try:
                if isinstance(condition, SyntaxError) or not eval(condition, frame.f_globals, frame.f_locals):
                    return
            except BaseException:
                return
        expression = probe["expression_code"]
        if isinstance(expression, SyntaxError):
            report = "F" + json.dumps({"type": "error", "value": "SyntaxError: %s" % expression},
                                      ensure_ascii=False)
        else:
            try:
                value = eval(expression, frame.f_globals, frame.f_locals)
            except BaseException as e:
                report = "F" + json.dumps({"type": "error", "value": "%s: %s" % (type(e).__name__, e)},
                                          ensure_ascii=False)
            else:
                report = debug_mcp_probe.encode(value, _plan["maxChars"])
        stack = json.dumps(_stack(frame)) if _plan.get("stack") else ""
        _send("hit", str(index), stack, report)
        _hits += 1
        if _hits >= _plan["maxHits"]:
            _stop()
    finally:
        _local.busy = False


def _stack(frame):
    """The top frames, the program's: without runpy's and debug-mcp's own."""
    frames = []
    helpers = os.path.dirname(os.path.abspath(__file__))
    while frame is not None and len(frames) < _plan["stackFrames"]:
        filename = frame.f_code.co_filename
        own = os.path.dirname(os.path.abspath(filename)) == helpers
        runpy = filename.endswith("runpy.py") or filename == "<frozen runpy>"
        if not own and not runpy:
            frames.append({"function": frame.f_code.co_name, "file": os.path.abspath(filename),
                           "line": frame.f_lineno})
        frame = frame.f_back
    return frames


def _server_said_stop():
    """Whether the server wrote `stop` (the run's hit cap): read without waiting."""
    try:
        import select

        readable, _, _ = select.select([_sock], [], [], 0)
        return bool(readable) and _sock.recv(64).startswith(b"stop")
    except (OSError, ValueError):
        return False


def _stop():
    """No more hits: nothing is watched from now on."""
    global _stopped
    _stopped = True
    if _tool is not None:
        monitoring = sys.monitoring
        monitoring.set_events(_tool, 0)
        for code in list(_codes):
            try:
                monitoring.set_local_events(_tool, code, 0)
            except Exception:
                pass
    else:
        sys.settrace(None)
        threading.settrace(None)


# CPython 3.12 and later: sys.monitoring.

def _watch_with_monitoring():
    global _tool
    monitoring = sys.monitoring
    # 0 is the debugger's, 1 coverage's, 2 the profiler's, 5 the optimizer's: 3 or 4, free.
    for tool in (3, 4, 5, 2, 1):
        if monitoring.get_tool(tool) is None:
            _tool = tool
            break
    else:
        return _watch_with_settrace()
    monitoring.use_tool_id(_tool, "debug-mcp")
    events = monitoring.events

    def on_start(code, offset):
        if _probes_in(code):
            monitoring.set_local_events(_tool, code, events.LINE)
        return monitoring.DISABLE

    def on_line(code, line):
        for index, probed in _probes_in(code):
            if probed == line:
                _hit(index, sys._getframe(1))
                return None
        return monitoring.DISABLE

    monitoring.register_callback(_tool, events.PY_START, on_start)
    monitoring.register_callback(_tool, events.LINE, on_line)
    monitoring.set_events(_tool, events.PY_START)


# Before 3.12: sys.settrace, from when a probed file's code first runs.

def _watch_with_settrace():
    def local(frame, event, arg):
        if event == "line":
            for index, probed in _probes_in(frame.f_code):
                if probed == frame.f_lineno:
                    _hit(index, frame)
        return local

    def global_trace(frame, event, arg):
        return local if _probes_in(frame.f_code) else None

    def trace_all():
        sys.settrace(global_trace)
        threading.settrace(global_trace)

    if not hasattr(sys, "addaudithook"):
        return trace_all()
    started = []

    # Tracing slows every call down: it starts when a probed file's code first runs (its
    # module's `exec`), not at the interpreter's start.
    def on_audit(event, args):
        if not started and event == "exec" and args and isinstance(args[0], types.CodeType):
            if _is_probed_file(args[0].co_filename):
                started.append(True)
                trace_all()

    sys.addaudithook(on_audit)
