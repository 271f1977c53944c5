"""debug-mcp's line probes for a Python program run by `debug-script`: no debugger, only "this
line ran in this frame" and an evaluation there.

sitecustomize.py (first on the program's PYTHONPATH) calls `start()` when DEBUG_MCP_TRACE holds
the plan (Base64 JSON: the probes, the socket to report on, the caps). Every Python process of
the program inherits the environment, so children (subprocess, multiprocessing, pytest-xdist
workers) start the same way; a forked child reconnects. Each process reports on its own
connection (the process the server started, on one it inherits: `DEBUG_MCP_TRACE_FD`; the
others to a Unix socket in the server's private scratch directory), one line per message:

    hello   {pid, ppid, argv, python}
    resolved        {probe, line}        the line a probe stops at (the first process only)
    hit     PROBE   [frames] or nothing  F{json} or T{json}: was the value cut, {type, value}
                                         (a probe without an expression: {locals})
    failure {kind, type, message, test, frames, framesOmitted}   with `failures` in the plan
    hang    [{thread, state, frames}]    where every thread is (asked by a signal)
    calls   [records]   {function: omitted}   traced calls that ended (`debug_mcp_calls`)

Fields are separated by tabs (JSON escapes a tab in a string, so none is inside one).

The server may write `stop` (the hit cap was reached): it is read at the next hit. Before it
kills the program for hanging (its timeout, or a quiet stretch) it sends each process the plan's
`hangSignal` (a real-time signal): the handler, run by the main thread between two bytecodes
(a lock's acquire, a sleep, a socket's recv are interrupted for it), reports where every
thread is (`debug_mcp_hang.py`). A thread of our own would answer too, but a process with two
threads warns at each fork on 3.12+ (and fails a suite run with warnings as errors).

How lines are watched: on CPython 3.12+ with `sys.monitoring` (PEP 669), LINE events enabled
only for the code objects that hold a probed line (found at their PY_START, which is then
disabled for every other code object); before 3.12 with `sys.settrace`, a trace function that
returns a local tracer only for frames of those code objects. A probe's line is resolved as
debugpy resolves a breakpoint's: a line without code moves to the closest line with code before
it (line 0, before any code: nothing can stop there).
"""

# Only what a short program would not import anyway is kept off the start (each module ~0.5 ms
# of every run's, measured on 3.11): C modules (_thread, _socket) stand in for threading and
# socket, the plan comes as JSON (not base64), bisect is imported by probes only, the types
# are the builtins' own, and dis is read only before 3.10 (code objects say their lines
# themselves since).
import _thread
import os
import sys

import debug_mcp_probe
from debug_mcp_probe import dumps

_MODULE = type(sys)
_FUNCTION = type(lambda: None)
_CODE = type((lambda: None).__code__)
# debug-mcp's helper files (this one's folder): never the program's frames.
_HELPERS = os.path.dirname(os.path.abspath(__file__))
_plan = None
_sock = None
_send_lock = _thread.allocate_lock()
_local = _thread._local()
# Per probe: [probe, resolved line or None]; per code object: the probes it holds.
_probes = []
_codes = {}
_files = {}
_hits = 0
_stopped = False
_tool = None
# `debug_mcp_calls`, when the plan traces calls.
_calls = None


def start():
    global _plan
    text = os.environ.get("DEBUG_MCP_TRACE")
    if not text or _plan is not None:
        return
    try:
        _plan = debug_mcp_probe.loads(text)
    except Exception:
        return
    for probe in _plan["probes"]:
        probe["real"] = os.path.realpath(probe["file"])
        probe["condition_code"] = _compiled(probe.get("condition"))
        probe["expression_code"] = _compiled(probe.get("expression"))
        _probes.append([probe, None])
    _connect()
    _watch_hang()
    # The first Python process resolves the probes' lines now (a line that cannot stop
    # ends the run before the program does anything); the others when a probed file loads.
    if os.environ.pop("DEBUG_MCP_TRACE_RESOLVE", None) is not None:
        for index, entry in enumerate(_probes):
            line = _resolve(entry)
            _send("resolved", dumps({"probe": index, "line": line}))
            if line == 0:
                _sock.close()
                os._exit(3)
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=_forked)
    if _plan.get("failures"):
        _watch_failures()
    if _plan.get("calls"):
        _watch_calls()
    if _plan.get("userUnhandled") and hasattr(sys, "monitoring"):
        _watch_unwinds()
    if not _probes and _calls is None and not _plan.get("userUnhandled"):
        return
    if hasattr(sys, "monitoring"):
        if _calls is not None:
            # The traced functions compiled with their calls where they can be: a call past
            # the cap then costs two tests and a count, where sys.monitoring's callback for it
            # cost 0.46 us (3.13: 10,000 calls, 1.15x the program alone).
            _rewrite_imports(probes=False)
            _on_first_run(lambda: None)
        if _probes:
            _watch_with_monitoring()
    else:
        if sys.version_info >= (3, 8):
            _rewrite_imports()
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
    _sock = _inherited()
    if _sock is None:
        import _socket

        _sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        _sock.connect(_plan["socket"])
    try:
        argv = list(sys.orig_argv)
    except AttributeError:
        # Before 3.10; before 3.7 sys.argv is not set yet while site runs.
        argv = [sys.executable] + getattr(sys, "argv", [])
    hello = {"pid": os.getpid(), "ppid": os.getppid(), "argv": argv,
             "python": "%d.%d" % sys.version_info[:2]}
    _send("hello", dumps(hello))


class _Connection:
    """The connection the server made for the process it started (`DEBUG_MCP_TRACE_FD`: its
    descriptor, and the server's pid), read and written as a file: importing _socket cost a
    start ~0.6 ms (3.11)."""

    def __init__(self, fd):
        os.set_inheritable(fd, False)  # not the business of the programs this one runs
        self.fd = fd

    def fileno(self):
        return self.fd

    def sendall(self, data):
        data = memoryview(data)
        while data:
            data = data[os.write(self.fd, data):]

    def recv(self, size):
        return os.read(self.fd, size)

    def close(self):
        os.close(self.fd)


def _inherited():
    """The connection this process inherited from the server, if it is the process the server
    started (its parent), else None; the variable is gone for the processes it starts."""
    given = os.environ.pop("DEBUG_MCP_TRACE_FD", None)
    try:
        fd, server = given.split(":")
        if int(server) == os.getppid():
            return _Connection(int(fd))
    except (AttributeError, ValueError, OSError):
        pass
    return None


def _forked():
    """A forked child has its parent's connection: it reports on a new one of its own."""
    global _send_lock
    _send_lock = _thread.allocate_lock()
    if _calls is not None:
        _calls.forked()
    try:
        _sock.close()
    except Exception:
        pass
    _connect()


def _send(kind, *fields, wait=-1):
    """One report; `wait` seconds at most for the connection (a signal handler's report may
    interrupt a thread in the middle of its own)."""
    data = ("\t".join((kind,) + fields) + "\n").encode("utf-8", "replace")
    if not _send_lock.acquire(True, wait):
        return
    try:
        _sock.sendall(data)
    except OSError:
        pass
    finally:
        _send_lock.release()


def _watch_hang():
    """Answers the server's hang signal with where every thread is."""
    number = _plan.get("hangSignal")
    if not number:
        return
    try:
        import _signal

        _signal.signal(number, _hang)
    except (ImportError, ValueError, OSError):
        pass  # not the main thread (-c code run from a thread?), or no such signal


def _hang(signum, frame):
    if _calls is not None:
        _calls.flush(True)  # the calls still running are where it hangs too
    try:
        threads = _import_own("debug_mcp_hang").threads(_own, _locals, _plan["limits"]["frames"])
    except Exception:
        threads = []
    _send("hang", dumps(threads, ensure_ascii=False), wait=0.5)


def _import_own(name):
    """One of debug-mcp's modules, through sitecustomize's `load_own` (compiled once) where it
    loaded us, else from our folder (debug_mcp_run.py took it off sys.path)."""
    if name in sys.modules:
        return sys.modules[name]
    load = getattr(sys.modules.get("sitecustomize"), "load_own", None)
    if load is not None:
        return load(name)
    sys.path.insert(0, _HELPERS)
    try:
        return __import__(name)
    finally:
        sys.path.remove(_HELPERS)


def _watch_calls():
    global _calls
    for target in _plan["calls"]:
        target["real"] = os.path.realpath(target["file"])
    _calls = _import_own("debug_mcp_calls")
    # Modules are read: compiled with the calls (their qualified names, before 3.11).
    _calls.setup(_plan, lambda *fields: _send(*fields, wait=0.5), _preview, _syntax, _rewritten)


def _resolve(entry):
    """A probe's line as the file's code has it: the line itself, or the closest line with
    code before it; 0 when none is; None when the file cannot be compiled."""
    probe, line = entry
    if line is not None:
        return line
    lines = debug_mcp_probe.lines_with_code(probe["real"])
    if lines is None:
        return None
    lines = sorted(lines)
    line = probe["line"]
    if line not in lines:
        import bisect

        # Before any code, 0 (3.11+ says so itself: a module's first instruction is on line 0).
        index = bisect.bisect_left(lines, line)
        line = lines[index - 1] if index > 0 else 0
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
        # A rewritten module's code calls `_hit` itself.
        indexes = _is_probed_file(code.co_filename) if code not in _rewritten else ()
        if indexes:
            own = debug_mcp_probe.line_starts(code)
            lines = ((i, _resolve(_probes[i])) for i in indexes)
            found = tuple((i, line) for i, line in lines if line in own)
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
        if expression is None:
            report = "F" + dumps({"locals": _locals(frame)}, ensure_ascii=False)
        elif isinstance(expression, SyntaxError):
            report = "F" + dumps({"type": "error", "value": "SyntaxError: %s" % expression},
                                      ensure_ascii=False)
        else:
            try:
                value = eval(expression, frame.f_globals, frame.f_locals)
            except BaseException as e:
                report = "F" + dumps({"type": "error", "value": "%s: %s" % (type(e).__name__, e)},
                                          ensure_ascii=False)
            else:
                report = debug_mcp_probe.encode(value, _plan["maxChars"])
        stack = dumps(_stack(frame)) if _plan.get("stack") else ""
        _send("hit", str(index), stack, report)
        _hits += 1
        if _hits >= _plan["maxHits"]:
            _stop()
    finally:
        _local.busy = False


def _stack(frame):
    """The top frames, the program's: without runpy's and debug-mcp's own."""
    frames = []
    while frame is not None and len(frames) < _plan["stackFrames"]:
        filename = frame.f_code.co_filename
        own = os.path.dirname(os.path.abspath(filename)) == _HELPERS
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
        import threading

        sys.settrace(None)
        threading.settrace(None)


# Failures: where a test runner (pytest, unittest) records a failing test, and where an
# exception reaches the top of a thread; each reported with the program's own frames.

_failures = 0


def _watch_failures():
    # pytest loads the plugin named here in every process it runs (xdist workers inherit it).
    plugins = os.environ.get("PYTEST_PLUGINS", "")
    if "debug_mcp_pytest" not in plugins.split(","):
        os.environ["PYTEST_PLUGINS"] = ",".join(p for p in (plugins, "debug_mcp_pytest") if p)
    if _HELPERS not in sys.path:
        sys.path.append(_HELPERS)
    hook = sys.excepthook

    # Only the interpreter's own calls are failures: a program may call a hook itself (a test
    # of a traceback formatter). The interpreter calls sys.excepthook once every frame has
    # unwound (no Python caller), and threading.excepthook from threading's own code.
    def excepthook(kind, value, tb):
        try:
            sys._getframe(1)
        except ValueError:
            failure("uncaught", value, tb)
        hook(kind, value, tb)

    sys.excepthook = excepthook
    import threading

    thread_hook = getattr(threading, "excepthook", None)  # Python 3.8+

    def thread_excepthook(args):
        if sys._getframe(1).f_code.co_filename == threading.__file__:
            failure("uncaught", args.exc_value, args.exc_traceback)
        thread_hook(args)

    if thread_hook is not None:
        threading.excepthook = thread_excepthook
    _patch_unittest()


def _patch_unittest():
    """unittest's results record each failing test: wrapped when unittest is first imported
    (importing it here would cost every program that never does)."""
    import builtins

    original = builtins.__import__

    def patched():
        result = sys.modules.get("unittest.result")
        if result is None or getattr(result.TestResult, "_debug_mcp", False):
            return False
        for name in ("addFailure", "addError"):
            method = getattr(result.TestResult, name)

            def wrapper(self, test, err, method=method):
                if err and err[1] is not None and not isinstance(err[1], SystemExit):
                    failure("test", err[1], err[2], test.id())
                return method(self, test, err)

            setattr(result.TestResult, name, wrapper)
        result.TestResult._debug_mcp = True
        return True

    def importing(name, *args, **kwargs):
        module = original(name, *args, **kwargs)
        if name.startswith("unittest") and patched():
            builtins.__import__ = original
        return module

    if not patched():
        builtins.__import__ = importing


def _own(filename):
    """Whether a file is the program's own code: not the standard library, not an installed
    package, not debug-mcp's."""
    found = _own_files.get(filename)
    if found is None:
        path = os.path.abspath(filename)
        found = not (filename.startswith("<") or "site-packages" in path or "dist-packages" in path
                     or any(path.startswith(p) for p in _library_roots()))
        _own_files[filename] = found
    return found


_own_files = {}
_roots = []


def _library_roots():
    if not _roots:
        import sysconfig

        for key in ("stdlib", "platstdlib", "purelib", "platlib"):
            try:
                _roots.append(os.path.realpath(sysconfig.get_path(key)) + os.sep)
                _roots.append(sysconfig.get_path(key) + os.sep)
            except Exception:
                pass
        _roots.append(_HELPERS + os.sep)
    return _roots


def _preview(value):
    """A value's short text (`repr`, cut at the plan's limit), at a cost bounded by the limit:
    a long list is not written whole to show its first items."""
    limit = _plan["limits"]["preview"]
    kind = type(value)
    if kind in _PLAIN_TYPES or (kind is str and len(value) < limit // 2):
        text = repr(value)  # the most common, at once (a traced call's arguments)
    else:
        try:
            text = _short(value, limit, 3)
        except BaseException as e:
            text = "<unrepresentable: %s>" % type(e).__name__
    return text if len(text) <= limit else text[:limit] + "…"


_PLAIN_TYPES = (int, float, bool, complex, type(None))
_BRACKETS = {list: ("[", "]"), tuple: ("(", ")"), set: ("{", "}"),
             frozenset: ("frozenset({", "})"), dict: ("{", "}")}


def _short(value, limit, depth):
    """`repr(value)`, or for the built-in containers and strings as much of it as `limit`
    characters show (a little more, never the whole)."""
    kind = type(value)
    if kind in _PLAIN_TYPES:
        return repr(value)
    if kind is str or kind is bytes:
        return repr(value[:limit + 1]) if len(value) > limit else repr(value)
    brackets = _BRACKETS.get(kind)
    if brackets is None:
        return repr(value)
    if not value:
        return repr(value)
    if depth == 0:
        return brackets[0] + "…" + brackets[1]
    parts = []
    used = 0
    items = value.items() if kind is dict else value
    for item in items:
        if used > limit:
            parts.append("…")
            break
        if kind is dict:
            part = _short(item[0], limit, depth - 1) + ": " + _short(item[1], limit, depth - 1)
        else:
            part = _short(item, limit, depth - 1)
        parts.append(part)
        used += len(part) + 2
    inner = ", ".join(parts)
    if kind is tuple and len(value) == 1:
        inner += ","
    return brackets[0] + inner + brackets[1]


def _locals(frame):
    """A frame's locals as short previews: name -> repr, at most the plan's limit (modules,
    functions, classes and pytest's assertion temporaries left out)."""
    shown = {}
    try:
        items = list(frame.f_locals.items())
    except Exception:
        return shown
    skipped = 0
    for name, value in items:
        # pytest's rewritten assertions keep the values they compared in `@py_assert<n>`.
        if name.startswith("@") and not (name.startswith("@py_assert") and value is not None):
            continue
        if name.startswith("__") and name.endswith("__"):
            continue
        if isinstance(value, (_MODULE, _FUNCTION, type)):
            continue
        if len(shown) == _plan["limits"]["locals"]:
            skipped += 1
            continue
        shown[name] = _preview(value)
    if skipped:
        shown["…"] = "%d more" % skipped
    return shown


def failure(kind, exc, tb, test=None):
    """Reports one failure: the exception, and the program's own frames of its traceback (where
    it was raised first, at most 5), each with its locals. A test's or an uncaught exception
    reported as `userUnhandled` already says it is the `same`: it takes that one's place."""
    global _failures
    if (_stopped_failures() or isinstance(exc, (SystemExit, KeyboardInterrupt))
            or getattr(_local, "busy", False)):
        return
    _local.busy = True
    try:
        _failures += 1
        entries = []
        while tb is not None:
            entries.append((tb.tb_frame, tb.tb_lineno))
            tb = tb.tb_next
        limits = _plan["limits"]
        own = [(f, line) for f, line in reversed(entries) if _own(f.f_code.co_filename)]
        frames = [{"function": f.f_code.co_name, "file": os.path.abspath(f.f_code.co_filename),
                   "line": line, "locals": _locals(f)} for f, line in own[:limits["frames"]]]
        message = str(exc)
        if len(message) > limits["message"]:
            message = message[:limits["message"]] + "…"
        record = {"kind": kind, "type": type(exc).__name__, "message": message, "frames": frames}
        if test:
            record["test"] = test
        if kind == "userUnhandled":
            _unwound[id(exc)] = exc
        if _unwound.get(id(exc)) is exc:
            record["same"] = id(exc)
        omitted = len(entries) - len(frames)
        if omitted:
            record["framesOmitted"] = omitted
        _send("failure", dumps(record, ensure_ascii=False))
    except Exception:
        pass
    finally:
        _local.busy = False


# Exceptions that left the program's own code into a library that caught them (`userUnhandled`),
# by id: recorded where they left it, at once (the library may never end: a server).

_unwound = {}
# A test runner calls the test and catches what it raises: the test's failure (recorded as
# such), or an exception it expected (`assertRaises`, `pytest.raises`).
_RUNNERS = tuple(os.sep + name + os.sep for name in ("unittest", "_pytest", "pluggy"))


def _left_own(frame, exception, traceback):
    """`exception` leaves `frame`: a failure when `frame` is the program's own code and its
    caller a library's (not a test runner's)."""
    caller = frame.f_back
    if (caller is None or isinstance(exception, debug_mcp_probe.ENDINGS)
            or getattr(_local, "busy", False) or _unwound.get(id(exception)) is exception):
        return
    if not _own(frame.f_code.co_filename) or _own(caller.f_code.co_filename):
        return
    if any(runner in caller.f_code.co_filename for runner in _RUNNERS):
        return
    failure("userUnhandled", exception, traceback)


def _watch_unwinds():
    """3.12+: PY_UNWIND, which costs nothing until an exception leaves a frame."""
    monitoring = sys.monitoring
    if _monitoring_tool() is None:
        return

    def on_unwind(code, offset, exception):
        _left_own(sys._getframe(1), exception, exception.__traceback__)

    monitoring.register_callback(_tool, monitoring.events.PY_UNWIND, on_unwind)
    monitoring.set_events(_tool, monitoring.get_events(_tool) | monitoring.events.PY_UNWIND)


def _stopped_failures():
    # The server keeps the first `maxFailures` of all processes and counts the rest: each
    # process sends its first hundred.
    return _failures >= 100


# CPython 3.12 and later: sys.monitoring.

def _monitoring_tool():
    """The sys.monitoring tool id the trace uses, taken once (None when none is free)."""
    global _tool
    if _tool is None:
        monitoring = sys.monitoring
        # 0 is the debugger's, 1 coverage's, 2 the profiler's, 5 the optimizer's: 3 or 4.
        for tool in (3, 4, 5, 2, 1):
            if monitoring.get_tool(tool) is None:
                monitoring.use_tool_id(tool, "debug-mcp")
                _tool = tool
                break
    return _tool


def _watch_with_monitoring():
    monitoring = sys.monitoring
    if _monitoring_tool() is None:
        return _watch_with_settrace()
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
    monitoring.set_events(_tool, monitoring.get_events(_tool) | events.PY_START)


# Before 3.12, first: a probed module that Python imports from its source file, and the main
# script, get a call before the probed line's statement (its source compiled with it, never
# written to a .pyc), which costs nothing elsewhere. Where that cannot stand for the line's
# event (the line is not the start of a plain statement or an `if`, it holds a comprehension,
# a lambda, a yield or an await; a module another loader compiles, such as a test file pytest
# rewrites), sys.settrace below serves. The traced functions' calls are compiled in the same
# way on every version (`debug_mcp_calls.rewrite`).

_HIT = "__debug_mcp_hit__"
_rewritten = set()
_rewriting = False  # whether modules may be rewritten (some probed or traced file is .py)


def _syntax():
    """debug_mcp_syntax, loaded when a module is first rewritten: it imports `_ast`, which
    makes the AST's types (~2 ms of a start on 3.11), and a rewrite kept from an earlier run
    needs none of it."""
    return _import_own("debug_mcp_syntax")

_PLAIN = ("Expr", "Assign", "AugAssign", "AnnAssign", "Return", "Raise", "Assert", "Delete",
          "Pass", "Break", "Continue", "Import", "If")
_NOT_PLAIN = ("Lambda", "ListComp", "SetComp", "DictComp", "GeneratorExp", "Yield", "YieldFrom",
              "Await")


def _rewrite_imports(probes=True):
    """Rewrites the probed (unless `probes` is False) and traced modules Python imports from
    their source."""
    import builtins

    # importlib.machinery's classes, without importing importlib (and warnings): ~0.8 ms.
    bootstrap = sys.modules.get("_frozen_importlib_external")
    if bootstrap is None or not hasattr(bootstrap, "SourceFileLoader"):
        import importlib.machinery as bootstrap
    PathFinder, SourceFileLoader = bootstrap.PathFinder, bootstrap.SourceFileLoader

    stems = set()
    files = [probe["real"] for probe, _ in _probes if probes] + [c["real"] for c in _plan.get("calls", ())]
    for file in files:
        name, ext = os.path.splitext(os.path.basename(file))
        if ext == ".py":
            stems.add(name if name != "__init__" else os.path.basename(os.path.dirname(file)))
    if not stems:
        return
    global _rewriting
    _rewriting = True

    class Loader(SourceFileLoader):
        def get_code(self, fullname):
            path = self.get_filename(fullname)
            code = _rewritten_code(self.get_data(path), path)
            return code if code is not None else super().get_code(fullname)

    class Finder:
        @classmethod
        def find_spec(cls, fullname, path=None, target=None):
            if fullname.rpartition(".")[2] not in stems:
                return None
            spec = PathFinder.find_spec(fullname, path, target)
            if (spec is None or type(spec.loader) is not SourceFileLoader
                    or not ((probes and _is_probed_file(spec.origin)) or _calls_in(spec.origin))):
                return None
            spec.loader = Loader(spec.loader.name, spec.loader.path)
            return spec

    setattr(builtins, _HIT, _hit_here)
    if _calls is not None:
        setattr(builtins, _calls.HOOK, _calls)
    sys.meta_path.insert(0, Finder)


def _calls_in(filename):
    return _calls is not None and _calls.in_file(filename)


def _hit_here(index):
    _hit(index, sys._getframe(1))


def _rewritten_code(source, path):
    """The module's code with a call before each probed line's statement and its traced
    functions' calls reported (`debug_mcp_calls.rewrite`), or None (then the file is compiled
    as usual and traced). A rewrite is kept in our folder for the next run of the same source
    and plan (while the server runs): parsing and compiling again cost a start ~2.5 ms on 3.11,
    most of it the AST's types made, for a short script."""
    kept = _kept_rewrite(source, path)
    code = _rewrite_again(kept, path) if kept else None
    if code is None:
        code = _rewrite(source, path)
        if code is not None and kept:
            _keep_rewrite(kept, code, path)
    nested = [code] if code is not None else []
    while nested:
        one = nested.pop()
        _rewritten.add(one)
        nested.extend(c for c in one.co_consts if isinstance(c, _CODE))
    return code


def _kept_rewrite(source, path):
    """Where the rewrite of `source` at `path` for this plan is kept (named by a hash of them
    and the Python version), or None."""
    try:
        import _imp

        bootstrap = sys.modules["_frozen_importlib_external"]
        probes = [(i, _probes[i][0]["line"]) for i in _is_probed_file(path)]
        wanted = _calls.functions_wanted(path) if _calls_in(path) else None
        plan = repr((path, probes, wanted)).encode("utf-8", "replace")
        digest = _imp.source_hash(bootstrap._RAW_MAGIC_NUMBER, source + b"\0" + plan)
        return os.path.join(_HELPERS, "rewritten-%s.%s" % (digest.hex(), sys.implementation.cache_tag))
    except Exception:
        return None


def _rewrite_again(kept, path):
    """The kept rewrite's code, with what the rewrite learnt of the file (the probes' lines,
    the traced functions' names); None when none is kept."""
    import marshal

    try:
        with open(kept, "rb") as f:
            code, lines, learnt = marshal.loads(f.read())
    except (OSError, EOFError, ValueError, TypeError):
        return None
    for index, line in lines:
        _probes[index][1] = line
    if learnt is not None:
        _calls.learn(path, learnt)
    return code


def _keep_rewrite(kept, code, path):
    import marshal

    lines = [(i, _probes[i][1]) for i in _is_probed_file(path)]
    learnt = _calls.learnt(path) if _calls_in(path) else None
    part = "%s.%d" % (kept, os.getpid())
    try:
        with open(part, "wb") as f:
            f.write(marshal.dumps((code, lines, learnt)))
        os.replace(part, kept)
    except (OSError, ValueError):
        pass


def _rewrite(source, path):
    from _ast import Constant, Expr

    syntax = _syntax()
    try:
        tree = syntax.parse(source, path)
    except SyntaxError:
        return None
    places = []
    for index in _is_probed_file(path):
        line = _resolve(_probes[index])
        place = _statement_at(tree, line, syntax) if line else None
        if place is None:
            return None
        places.append((index, place))
    for index, (body, position) in sorted(places, key=lambda p: -p[1][1]):
        statement = body[position]
        call = Expr(syntax.call(_HIT, None, Constant(index)))
        syntax.place(call, statement)
        body.insert(position, call)
    if _calls_in(path) and not _calls.rewrite(tree, path):
        return None
    try:
        return compile(tree, path, "exec", 0, True)
    except Exception:
        return None


def _statement_at(tree, line, syntax):
    """Where the statement that starts `line` is (its body list and position in it), when a
    call before it runs exactly when the line's event would."""
    from _ast import If, stmt

    for parent in syntax.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            body = getattr(parent, field, None)
            if not isinstance(body, list):
                continue
            for position, statement in enumerate(body):
                if getattr(statement, "lineno", None) != line or not isinstance(statement, stmt):
                    continue
                if type(statement).__name__ not in _PLAIN:
                    return None
                header = [statement.test] if isinstance(statement, If) else [statement]
                if any(type(node).__name__ in _NOT_PLAIN for part in header for node in syntax.walk(part)):
                    return None
                # The statement before it must not end on the line (its event came first).
                if position and body[position - 1].end_lineno >= line:
                    return None
                return body, position
    return None


# The main script (Python compiled it before any hook of ours could): its code compiled again
# with its probes (before 3.12) and calls, run in its place from the audit hook that says it is
# about to run.

def _main_compiled(code):
    """The main script's code compiled with its probes and calls, when `code` is the main
    script's and its rewrite compiles; else None."""
    main = sys.modules.get("__main__")
    path = code.co_filename
    if code.co_name != "<module>" or getattr(main, "__file__", None) != path or not _rewriting:
        return None
    try:
        with open(path, "rb") as f:
            source = f.read()
    except OSError:
        return None
    return _rewritten_code(source, path)


def _run_main(code):
    """Runs the main script's `code` in `__main__`, then ends the program as Python would
    have: its exit status, an uncaught exception said by `sys.excepthook` (without this
    frame). Python's own code for it never runs."""
    try:
        exec(code, sys.modules["__main__"].__dict__)
    except (SystemExit, KeyboardInterrupt):
        raise
    except BaseException as exc:
        # (The interpreter prints the exception's own traceback, not the one given.)
        tb = exc.__traceback__.tb_next
        exc.with_traceback(tb)
        sys.last_type, sys.last_value, sys.last_traceback = type(exc), exc, tb
        sys.excepthook(type(exc), exc, tb)
        raise SystemExit(1)
    raise SystemExit(0)


# Before 3.12 otherwise: sys.settrace, from when a probed file's code first runs.

def _watch_with_settrace():
    def local(frame, event, arg):
        if event == "line":
            for index, probed in _probes_in(frame.f_code):
                if probed == frame.f_lineno:
                    _hit(index, frame)
        return local

    unwinds = bool(_plan.get("userUnhandled"))

    def watching(frame, event, arg):
        """The program's own frames, for `userUnhandled`: where an exception leaves them."""
        if event == "exception":
            _local.thrown = (frame, arg[1], arg[2])
        elif event == "return":
            left = debug_mcp_probe.unwound(_local, frame, arg)
            if left is not None:
                _left_own(frame, *left)
        elif event == "line":
            local(frame, event, arg)
        return watching

    # Per code object: bit 1 probed, 2 its calls traced, 4 own code watched for exceptions
    # leaving it (one dict lookup for the untouched code every call of the program runs).
    kinds = {}
    # At interpreter shutdown (3.7) modules' globals become None while code still runs:
    # tracing ends with the program's own exit handlers.
    import atexit

    atexit.register(sys.settrace, None)

    def global_trace(frame, event, arg):
        code = frame.f_code
        kind = kinds.get(code)
        if kind is None:
            traced = _calls is not None and code not in _rewritten and bool(_calls._traced(code))
            watched = unwinds and _own(code.co_filename)
            kind = kinds[code] = bool(_probes_in(code)) + 2 * traced + 4 * watched
        if not kind:
            return None
        tracer = None
        if kind & 4:
            tracer = watching
            frame.f_trace_lines = bool(kind & 1)
        elif kind & 1:
            tracer = local
        if kind & 2:
            traced = _calls.traced(frame, event, arg, tracer)
            if traced is not None:
                return traced
        return tracer

    def trace_all():
        import threading

        sys.settrace(global_trace)
        threading.settrace(global_trace)

    if unwinds or not hasattr(sys, "addaudithook"):
        return trace_all()
    # Tracing slows every call down: it starts when a probed file's code first runs, not at
    # the interpreter's start.
    _on_first_run(trace_all)


def _on_first_run(then):
    """Calls `then()` when a probed or traced file's code first runs (its module's `exec`);
    when that code is the main script's, runs it compiled with its probes and calls in its
    place first (which ends the program)."""
    started = []

    def on_audit(event, args):
        if not started and event == "exec" and args and isinstance(args[0], _CODE):
            filename = args[0].co_filename
            if args[0] not in _rewritten and (_is_probed_file(filename) or _calls_in(filename)):
                started.append(True)
                main = _main_compiled(args[0])
                if main is not None:
                    _run_main(main)
                then()

    sys.addaudithook(on_audit)
