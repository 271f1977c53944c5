"""debug-mcp's Python debugger, in the program's own process, with nothing installed: a debug
adapter speaking DAP to debug-mcp over a Unix socket in the server's private scratch directory
(DEBUG_MCP_DAP names it). sitecustomize.py (or debug_mcp_run.py) starts it before the program's
first line; it answers debug-mcp's set-up (`initialize`, `attach`, the breakpoints,
`configurationDone`) on the main thread, then serves requests from a thread of its own while
the program runs. Where the program stops is debug_mcp_stops.py's.

A stopped thread waits in `Stopped.wait` and runs the requests about its frames itself
(`scopes`, `variables`, `evaluate`, `setVariable`), so that an expression sees that thread's
state. It speaks debugpy's dialect where debug-mcp's debugpy flavour reads one: scope names
`Locals` and `Globals`, `repr` values, a logpoint's message as an `output` event with a
`source`, `format.rawString`.
"""

import _thread
import os
import sys

import debug_mcp_probe
import debug_mcp_stops as stops
from debug_mcp_probe import dumps, loads

_conn = None
_reader = None
# Stopped threads by DAP thread id; frames and variable references, valid while stopped.
_stopped = {}
_frames = {}
_references = {}
_next = [0]
_ids = {}
_threads_lock = _thread.allocate_lock()
# The longest value text (debug-mcp cuts it to the call's maxChars).
REPR_MAX = 65536
EVALUATE_WAIT = 9.0


class Connection(object):
    """DAP's Content-Length framing on a Unix socket."""

    def __init__(self, path):
        import _socket

        self.sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        self.sock.connect(path)
        self.lock = _thread.allocate_lock()
        self.buffer = b""
        self.seq = 0

    def send(self, message):
        with self.lock:
            self.seq += 1
            message["seq"] = self.seq
            body = dumps(message, ensure_ascii=False).encode("utf-8", "surrogateescape")
            try:
                self.sock.sendall(b"Content-Length: %d\r\n\r\n" % len(body) + body)
            except OSError:
                pass

    def read(self):
        """The next message, or None once the connection ended."""
        while True:
            end = self.buffer.find(b"\r\n\r\n")
            if end >= 0:
                length = 0
                for header in self.buffer[:end].split(b"\r\n"):
                    name, _, value = header.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                if len(self.buffer) >= end + 4 + length:
                    body = self.buffer[end + 4:end + 4 + length]
                    self.buffer = self.buffer[end + 4 + length:]
                    return loads(body.decode("utf-8"))
            try:
                chunk = self.sock.recv(65536)
            except OSError:
                return None
            if not chunk:
                return None
            self.buffer += chunk


def event(name, body):
    _conn.send({"type": "event", "event": name, "body": body})


def respond(request, body=None, error=None):
    message = {"type": "response", "request_seq": request.get("seq"),
               "command": request.get("command"), "success": error is None, "body": body or {}}
    if error is not None:
        message["message"] = error
    _conn.send(message)


def start():
    """Connects to debug-mcp and takes its set-up, before the program runs. Every Python
    process of the program does (they inherit DEBUG_MCP_DAP), each a child of the session but
    the first; a forked child connects anew."""
    global _conn
    path = os.environ.get("DEBUG_MCP_DAP")
    if not path:
        return
    _conn = Connection(path)
    if hasattr(os, "register_at_fork") and not _started:
        os.register_at_fork(after_in_child=_forked)
    arguments = {}
    while True:
        request = _conn.read()
        if request is None:
            return  # debug-mcp went away: the program runs undebugged
        command = request.get("command")
        if command == "initialize":
            respond(request, {"supportsConfigurationDoneRequest": True,
                              "supportsConditionalBreakpoints": True, "supportsLogPoints": True,
                              "supportsSetVariable": True, "supportsExceptionInfoRequest": True,
                              "exceptionBreakpointFilters": [
                                  {"filter": "raised", "label": "Raised Exceptions"},
                                  {"filter": "uncaught", "label": "Uncaught Exceptions"},
                                  {"filter": "userUnhandled",
                                   "label": "User Uncaught Exceptions"}]})
        elif command in ("attach", "launch"):
            arguments = request.get("arguments") or {}
            stops.setup(_Session, arguments.get("stopOnEntry"), arguments.get("rules"))
            if arguments.get("pauseSignal"):
                stops.install_pause_signal(arguments["pauseSignal"])
            respond(request)
            event("process", {"name": sys.argv[0] if sys.argv else "python",
                              "systemProcessId": os.getpid(), "startMethod": "launch",
                              "isLocalProcess": True})
            event("thread", {"reason": "started", "threadId": thread_id(_thread.get_ident())})
            event("initialized", {})
        elif command == "configurationDone":
            respond(request)
            break
        else:
            handle(request)
    if not _started:
        _hooks()
    _started.append(True)
    _start_reader()


# Whether this process (or the one it was forked from) started once.
_started = []


def _forked():
    """In a forked child: the parent's connection and stops are not its own; it connects as a
    process of its own (a multiprocessing worker, say) and waits for its set-up."""
    global _conn, _threads_lock
    try:
        _conn.sock.close()  # closing the child's copy leaves the parent's connection as it is
    except Exception:
        pass
    _conn = None
    _stopped.clear()
    _frames.clear()
    _references.clear()
    _ids.clear()
    _threads_lock = _thread.allocate_lock()
    stops.forked()
    try:
        start()
    except Exception as error:
        stops.detach()
        sys.stderr.write("debug-mcp: a forked process runs undebugged: %r\n" % (error,))


def _start_reader():
    global _reader
    import threading

    _reader = threading.Thread(target=_serve, name="debug-mcp")
    _reader.daemon = True
    _reader.start()


def _serve():
    stops._local.busy = True
    if not stops.MONITORING:
        sys.settrace(None)
    while True:
        request = _conn.read()
        if request is None:
            break
        handle(request)
    # debug-mcp went away: the program runs on, undebugged.
    stops.detach()
    for stopped in list(_stopped.values()):
        stopped.resume("continue")


def handle(request):
    command = request.get("command")
    handler = _HANDLERS.get(command)
    if handler is None:
        return respond(request, error="unsupported request `%s`" % command)
    try:
        body = handler(request.get("arguments") or {})
    except Exception as error:
        return respond(request, error=_message(error))
    respond(request, body)


def _message(error):
    return "%s: %s" % (type(error).__name__, error)


def thread_id(ident):
    """A thread's small DAP id: the main thread's is 1."""
    with _threads_lock:
        found = _ids.get(ident)
        if found is None:
            found = _ids[ident] = len(_ids) + 1
        return found


def _ident(thread):
    for ident, found in _ids.items():
        if found == thread:
            return ident
    return None


def _reference(kind, holder, value=None):
    _next[0] += 1
    _references[_next[0]] = (kind, holder, value)
    return _next[0]


# -- stops


class Stopped(object):
    """A thread stopped: its frames, innermost first, and the requests it runs for debug-mcp."""

    def __init__(self, thread, frames, exception, parked=False):
        import threading

        self.parked = parked
        self.thread = thread
        self.frames = frames
        self.exception = exception
        self.condition = threading.Condition(threading.Lock())
        self.jobs = []
        self.action = None
        self.ids = []

    def wait(self):
        while True:
            with self.condition:
                while not self.jobs and self.action is None:
                    self.condition.wait()
                if not self.jobs:
                    return self.action
                job = self.jobs.pop(0)
            job()

    def run(self, function):
        """`function()`, run by the stopped thread; its value or its exception."""
        done = _thread.allocate_lock()
        done.acquire()
        result = []

        def job():
            try:
                result.append((True, function()))
            except BaseException as error:
                result.append((False, error))
            done.release()

        with self.condition:
            self.jobs.append(job)
            self.condition.notify()
        if not done.acquire(True, EVALUATE_WAIT):
            raise RuntimeError("the program did not finish evaluating in time (it may wait "
                               "on another thread, or loop)")
        ok, value = result[0]
        if not ok:
            raise value
        return value

    def resume(self, action):
        with self.condition:
            self.action = action
            self.condition.notify()


def _frames_from(frame):
    frames = []
    while frame is not None:
        if not stops.hidden(frame):
            frames.append((frame, frame.f_lineno))
        frame = frame.f_back
    return frames


class _Session(object):
    """What debug_mcp_stops.py calls."""

    @staticmethod
    def stop(frame, reason, hits=None, exception=None, frames=None):
        if stops._detached:  # debug-mcp went away: nothing would resume it
            return "continue"
        stopped = _hold(frames or _frames_from(frame), exception, False)
        body = {"reason": reason, "threadId": stopped.thread, "allThreadsStopped": True}
        if hits:
            body["hitBreakpointIds"] = hits
        if exception is not None:
            body["text"] = exception[0].__name__
        event("stopped", body)
        return _wait(stopped)

    @staticmethod
    def park(frame):
        """Another thread stopped: this one waits, its frames inspectable, until it goes on."""
        if not stops._detached:
            _wait(_hold(_frames_from(frame), None, True))

    @staticmethod
    def log(message, frame):
        event("output", {"category": "console", "output": _logpoint_text(message, frame) + "\n",
                         "source": {}})


def _hold(frames, exception, parked):
    thread = thread_id(_thread.get_ident())
    stopped = Stopped(thread, frames, exception, parked)
    for frame_object, line in stopped.frames:
        _next[0] += 1
        _frames[_next[0]] = (stopped, frame_object, line)
        stopped.ids.append(_next[0])
    _stopped[thread] = stopped
    return stopped


def _wait(stopped):
    try:
        return stopped.wait()
    finally:
        if _stopped.get(stopped.thread) is stopped:
            del _stopped[stopped.thread]
        for frame_id in stopped.ids:
            _frames.pop(frame_id, None)
        for reference in [r for r, v in list(_references.items()) if v[1] is stopped]:
            _references.pop(reference, None)


def _logpoint_text(message, frame):
    """A logpoint's message with each `{expression}` evaluated in the frame."""
    out = []
    at = 0
    while True:
        start = message.find("{", at)
        if start < 0:
            out.append(message[at:])
            return "".join(out)
        depth, end = 0, start
        while end < len(message):
            if message[end] == "{":
                depth += 1
            elif message[end] == "}":
                depth -= 1
                if depth == 0:
                    break
            end += 1
        out.append(message[at:start])
        try:
            out.append(str(eval(message[start + 1:end], frame.f_globals, frame.f_locals)))
        except BaseException as error:
            out.append("<%s>" % _message(error))
        at = end + 1


def _hooks():
    """Uncaught exceptions stop before Python prints them."""
    hook = sys.excepthook

    def excepthook(kind, value, traceback):
        stops.uncaught(kind, value, traceback)
        hook(kind, value, traceback)

    sys.excepthook = excepthook
    import threading

    if hasattr(threading, "excepthook"):
        thread_hook = threading.excepthook

        def threading_excepthook(args):
            stops.uncaught(args.exc_type, args.exc_value, args.exc_traceback)
            thread_hook(args)

        threading.excepthook = threading_excepthook


# -- requests


def _resume(action):
    """Resumes the thread as asked, and the threads that stopped because it did."""

    def resume(arguments):
        stopped = _stopped.get(arguments.get("threadId"))
        if stopped is not None:
            stopped.resume(action)
        if not any(not s.parked for s in _stopped.values() if s is not stopped):
            stops.resumed()
            for other in list(_stopped.values()):
                if other.parked:
                    other.resume("continue")
        return {"allThreadsContinued": True} if action == "continue" else {}

    return resume


def _pause(arguments):
    stops.pause()
    return {}


def _disconnect(arguments):
    # Ending the program is debug-mcp's (it kills the process group): this lets it go.
    stops.detach()
    for stopped in list(_stopped.values()):
        stopped.resume("continue")
    return {}


def _threads(arguments):
    import threading

    reader = _reader.ident if _reader is not None else None
    threads = [{"id": thread_id(t.ident), "name": t.name} for t in threading.enumerate()
               if t.ident is not None and t.ident != reader]
    return {"threads": threads}


def _source(frame):
    path = frame.f_code.co_filename
    if not path.startswith("<"):
        path = os.path.abspath(path)
    return {"path": path, "name": os.path.basename(path)}


def _stack_trace(arguments):
    thread = arguments.get("threadId")
    stopped = _stopped.get(thread)
    if stopped is not None:
        listed = list(zip(stopped.ids, stopped.frames))
    else:
        frame = sys._current_frames().get(_ident(thread))
        listed = [(0, entry) for entry in _frames_from(frame)]
    start = arguments.get("startFrame") or 0
    levels = arguments.get("levels") or len(listed)
    frames = [{"id": frame_id, "name": frame.f_code.co_name, "source": _source(frame),
               "line": line, "column": 1}
              for frame_id, (frame, line) in listed[start:start + levels]]
    return {"stackFrames": frames, "totalFrames": len(listed)}


def _frame(arguments):
    found = _frames.get(arguments.get("frameId"))
    if found is None:
        raise LookupError("no such frame: the thread runs again")
    return found


def _scopes(arguments):
    stopped, frame, _ = _frame(arguments)
    return {"scopes": [
        {"name": "Locals", "variablesReference": _reference("locals", stopped, frame),
         "expensive": False},
        {"name": "Globals", "variablesReference": _reference("globals", stopped, frame),
         "expensive": False}]}


def _safe_repr(value):
    text = debug_mcp_probe.safe_repr(value)
    if len(text) > REPR_MAX:
        text = text[:REPR_MAX] + "..."
    return text


_SCALARS = (int, float, complex, str, bytes, bool, type(None), type(Ellipsis))


def _expandable(value):
    import types

    if isinstance(value, _SCALARS + (types.ModuleType, types.FunctionType, types.MethodType,
                                     types.BuiltinFunctionType, type)):
        return False
    if isinstance(value, (dict, list, tuple, set, frozenset)):
        return len(value) > 0
    return hasattr(value, "__dict__") or hasattr(type(value), "__slots__")


def _variable(name, value, stopped):
    reference = _reference("object", stopped, value) if _expandable(value) else 0
    return {"name": name, "value": _safe_repr(value), "type": type(value).__name__,
            "variablesReference": reference}


def _members(value):
    """A value's members as (name, value): a mapping's items, a sequence's items, an object's
    attributes (not its methods)."""
    if isinstance(value, dict):
        return [(_safe_repr(k), v) for k, v in list(value.items())]
    if isinstance(value, (list, tuple)):
        return [(str(i), v) for i, v in enumerate(value)]
    if isinstance(value, (set, frozenset)):
        return [(str(i), v) for i, v in enumerate(value)]
    members = []
    for name in dir(value):
        if name.startswith("__") and name.endswith("__"):
            continue
        try:
            member = getattr(value, name)
        except BaseException:
            continue
        if callable(member) and not isinstance(member, type):
            continue
        members.append((name, member))
    return members


def _named(scope):
    """A scope's names, as debugpy lists them: sorted, without dunder names."""
    named = [(k, v) for k, v in list(scope.items())
             if not (isinstance(k, str) and k.startswith("__") and k.endswith("__"))]
    named.sort(key=lambda item: str(item[0]))
    return named


def _variables(arguments):
    found = _references.get(arguments.get("variablesReference"))
    if found is None:
        raise LookupError("no such variables: the thread runs again")
    kind, stopped, holder = found

    def listed():
        if kind == "locals":
            members = _named(holder.f_locals)
        elif kind == "globals":
            members = _named(holder.f_globals)
        else:
            members = _members(holder)
        start = arguments.get("start") or 0
        count = arguments.get("count") or len(members)
        return [_variable(name, value, stopped) for name, value in members[start:start + count]]

    return {"variables": stopped.run(listed)}


def _evaluate(arguments):
    expression = arguments.get("expression", "")
    raw = (arguments.get("format") or {}).get("rawString")
    found = _frames.get(arguments.get("frameId"))
    if found is None:
        stopped = next(iter(_stopped.values()), None)
        if stopped is None:
            raise LookupError("the program runs: pause it or stop it at a breakpoint first")
        frame = stopped.frames[0][0]
    else:
        stopped, frame, _ = found

    def evaluated():
        try:
            code = compile(expression, "<debug-mcp>", "eval")
        except SyntaxError:
            if arguments.get("context") != "repl":
                raise
            exec(compile(expression, "<debug-mcp>", "exec"), frame.f_globals, frame.f_locals)
            return {"result": "", "variablesReference": 0}
        value = eval(code, frame.f_globals, frame.f_locals)
        shown = value if raw and isinstance(value, str) else _safe_repr(value)
        reference = _reference("object", stopped, value) if _expandable(value) else 0
        return {"result": shown, "type": type(value).__name__, "variablesReference": reference}

    return stopped.run(evaluated)


def _set_variable(arguments):
    found = _references.get(arguments.get("variablesReference"))
    if found is None:
        raise LookupError("no such variables: the thread runs again")
    kind, stopped, holder = found
    name = arguments.get("name")
    text = arguments.get("value", "")

    def assign():
        if kind in ("locals", "globals"):
            value = eval(text, holder.f_globals, holder.f_locals)
            if kind == "globals":
                holder.f_globals[name] = value
            else:
                _set_local(holder, name, value)
        else:
            frame = stopped.frames[0][0]
            value = eval(text, frame.f_globals, frame.f_locals)
            if isinstance(holder, dict):
                keys = [k for k in holder if _safe_repr(k) == name]
                holder[keys[0] if keys else name] = value
            elif isinstance(holder, list):
                holder[int(name)] = value
            else:
                setattr(holder, name, value)
        return {"value": _safe_repr(value), "type": type(value).__name__,
                "variablesReference": _reference("object", stopped, value) if _expandable(value)
                else 0}

    return stopped.run(assign)


def _set_local(frame, name, value):
    """A local of a running frame: written through f_locals (3.13's is the frame's own), else
    into the snapshot and back into the frame's fast locals."""
    scope = frame.f_locals
    scope[name] = value
    if sys.version_info >= (3, 13) or scope is frame.f_globals:
        return
    try:
        import ctypes

        ctypes.pythonapi.PyFrame_LocalsToFast(ctypes.py_object(frame), ctypes.c_int(0))
    except Exception as error:
        raise RuntimeError("cannot set a local of this frame: %s" % _message(error))


def _exception_info(arguments):
    stopped = _stopped.get(arguments.get("threadId"))
    if stopped is None or stopped.exception is None:
        raise LookupError("the thread is not stopped at an exception")
    kind, value, mode = stopped.exception
    name = kind.__qualname__ if kind.__module__ == "builtins" else "%s.%s" % (
        kind.__module__, kind.__qualname__)
    try:
        description = str(value)
    except BaseException as error:
        description = "<unprintable: %s>" % _message(error)
    return {"exceptionId": name, "description": description, "breakMode": mode,
            "details": {"typeName": name, "message": description}}


def _set_breakpoints(arguments):
    path = (arguments.get("source") or {}).get("path", "")
    return {"breakpoints": stops.set_breakpoints(path, arguments.get("breakpoints") or [])}


def _set_exception_breakpoints(arguments):
    stops.set_exception_filters(arguments.get("filters") or [])
    return {}


_HANDLERS = {
    "continue": _resume("continue"),
    "next": _resume("next"),
    "stepIn": _resume("stepIn"),
    "stepOut": _resume("stepOut"),
    "pause": _pause,
    "disconnect": _disconnect,
    "terminate": _disconnect,
    "threads": _threads,
    "stackTrace": _stack_trace,
    "scopes": _scopes,
    "variables": _variables,
    "evaluate": _evaluate,
    "setVariable": _set_variable,
    "exceptionInfo": _exception_info,
    "setBreakpoints": _set_breakpoints,
    "setExceptionBreakpoints": _set_exception_breakpoints,
    "setFunctionBreakpoints": lambda arguments: {"breakpoints": []},
    "configurationDone": lambda arguments: {},
}
