"""Where a Python program stops, for debug-mcp's in-process debugger (debug_mcp_session.py):
breakpoints (conditions, logpoints), steps, exceptions, pause and the entry stop.

Lines are watched with `sys.monitoring` on CPython 3.12+: PY_START enables LINE events only for
the code objects that hold a breakpoint's line (and returns DISABLE for every other one), so a
breakpoint never hit costs nothing; a step turns LINE, PY_RETURN, PY_YIELD and PY_UNWIND on
everywhere until the thread stops again. Before 3.12 `sys.settrace`: the global function gives a
local tracer only to the frames that need one (a breakpoint's code, a stepping thread's, all
while `raised` exceptions are watched).

A stop calls the session's `stop`, which blocks the thread until debug-mcp resumes it and says
how (`continue`, `next`, `stepIn`, `stepOut`). A step ends at the next line of its frame (over a
`yield` or an `await` it waits for the frame to resume), or of the caller once the frame returns;
a step in at the next line anywhere; a step out at the caller's next line.
"""

import _thread
import os
import sys

import debug_mcp_probe

HELPERS = os.path.dirname(os.path.abspath(__file__))
MONITORING = hasattr(sys, "monitoring")

# The session's callbacks: stop(frame, reason, ...) -> action, log(message, frame).
_session = None
_local = _thread._local()
_lock = _thread.allocate_lock()

# Breakpoints: real path -> {line: Breakpoint}; per code object, the breakpoint lines it runs.
_by_file = {}
_code_lines = {}
_real = {}
_hidden = {}
_next_id = 0
# `raised`, `uncaught`, `userUnhandled`; whether library code is passed over for `raised`, and
# the files kept.
_filters = set()
_pass_over = False
_keep = set()
# Per thread ident, its step; whether a pause or the entry stop is due.
_steps = {}
_pause = False
_entry = False
_detached = False
# While a thread is stopped, every other one stops at its next line (a thread blocked in a call
# stops when the call returns), as debugpy stops them all.
_suspend = False


class Breakpoint(object):
    __slots__ = ("id", "line", "condition", "log")

    def __init__(self, line, condition, log):
        global _next_id
        _next_id += 1
        self.id = _next_id
        self.line = line
        self.condition = None
        if condition:
            try:
                self.condition = compile(condition, "<condition>", "eval")
            except SyntaxError as error:
                self.condition = error
        self.log = log


class Step(object):
    """A step of one thread: `over` stops at the next line of `frame`, `into` at the next line
    anywhere, `out` once `leaving` returns. A frame that returns (or raises out, or, but for
    `over`, yields) hands the step to its caller, which stops at its next instruction: back at
    the line of the call, as pdb and debugpy show it."""

    __slots__ = ("kind", "frame", "leaving", "unwinding", "watched")

    def __init__(self, kind, frame):
        self.kind = kind
        self.frame = frame if kind == "over" else None
        self.leaving = frame
        self.unwinding = None
        # The caller whose next instruction is watched.
        self.watched = None

    def arrived(self, frame):
        return self.kind == "into" or frame is self.frame

    def left(self, frame, yielded):
        """`frame` returned, raised out, or yielded (`yielded`)."""
        if frame is not self.leaving or (yielded and self.kind == "over"):
            return
        caller = frame.f_back
        while caller is not None and hidden(caller):
            caller = caller.f_back
        if caller is None:
            # The thread's (or the program's) last frame: nothing of the program is left to
            # stop at, so the step ends.
            self.quiet()
            _steps.pop(_thread.get_ident(), None)
            _update()
            return
        self.quiet()
        self.kind = "over"
        self.frame = self.leaving = self.watched = caller
        if MONITORING:
            events = sys.monitoring.events
            code = caller.f_code
            sys.monitoring.set_local_events(
                _tool, code, sys.monitoring.get_local_events(_tool, code) | events.INSTRUCTION)
        else:
            caller.f_trace = _trace_local
            caller.f_trace_opcodes = True

    def quiet(self):
        """No more instruction events for the caller once it stopped (or the step ended)."""
        watched, self.watched = self.watched, None
        if watched is None:
            return
        if MONITORING:
            code = watched.f_code
            events = sys.monitoring.get_local_events(_tool, code)
            sys.monitoring.set_local_events(_tool, code, events & ~sys.monitoring.events.INSTRUCTION)
        else:
            watched.f_trace_opcodes = False


def real(filename):
    path = _real.get(filename)
    if path is None:
        path = filename if filename.startswith("<") else os.path.realpath(filename)
        _real[filename] = path
    return path


def hidden(frame):
    """Whether a frame is debug-mcp's own or runpy's (how `python -m` starts the program)."""
    filename = frame.f_code.co_filename
    found = _hidden.get(filename)
    if found is None:
        found = (os.path.dirname(real(filename)) == HELPERS or filename == "<frozen runpy>"
                 or filename.endswith(os.sep + "runpy.py"))
        _hidden[filename] = found
    return found


def is_library(path):
    return ("/lib/python3." in path or "/site-packages/" in path or "/dist-packages/" in path
            or path.startswith("<frozen"))


def breakpoint_lines(code):
    lines = _code_lines.get(code)
    if lines is None:
        placed = _by_file.get(real(code.co_filename))
        lines = frozenset(placed).intersection(debug_mcp_probe.line_starts(code)) if placed else ()
        _code_lines[code] = lines
    return lines


def _busy():
    return getattr(_local, "busy", False)


def is_main(frame):
    return frame.f_code.co_name == "<module>" and frame.f_globals.get("__name__") == "__main__"


# -- what debug-mcp asks


def setup(session, stop_on_entry, rules):
    """Starts watching, before the program's first line."""
    global _session, _entry, _pass_over
    _entry = bool(stop_on_entry)
    for rule in rules or ():
        if rule.get("include"):
            _keep.add(real(rule["path"]))
        else:
            _pass_over = True
    if _session is not None:  # a forked child set up again: watching already
        _update()
        return
    _session = session
    if MONITORING:
        _start_monitoring()
    else:
        import threading

        sys.settrace(_trace_call)
        threading.settrace(_trace_call)
    _update()


def forked():
    """In a forked child: only the thread that forked lives on, and nothing is stopped."""
    global _lock, _main_ident, _suspend, _pause
    _lock = _thread.allocate_lock()
    _main_ident = _thread.get_ident()
    _steps.clear()
    _suspend = _pause = False
    _update()


def set_breakpoints(path, specs):
    """A file's whole list of breakpoints (DAP's `setBreakpoints`): how each was placed."""
    path = real(path)
    lines = debug_mcp_probe.lines_with_code(path)
    placed = {}
    answers = []
    for spec in specs:
        line = spec.get("line", 0)
        if lines is None:
            answers.append({"verified": False, "line": line,
                            "message": "cannot read or compile %s" % path})
            continue
        if line not in lines:
            before = [l for l in lines if l < line]
            line = max(before) if before else 0
        if line == 0:
            answers.append({"verified": False, "line": 0})
            continue
        breakpoint = Breakpoint(line, spec.get("condition"), spec.get("logMessage"))
        if isinstance(breakpoint.condition, SyntaxError):
            # It could never be true: said, rather than never stopping without a word.
            error = breakpoint.condition
            answers.append({"verified": False, "line": line, "id": breakpoint.id,
                            "message": "the condition does not compile: SyntaxError: %s" % error.msg})
            continue
        placed[line] = breakpoint
        answers.append({"verified": True, "line": line, "id": breakpoint.id})
    with _lock:
        if placed:
            _by_file[path] = placed
        else:
            _by_file.pop(path, None)
        _code_lines.clear()
        _wanted.clear()
    _refresh()
    return answers


def set_exception_filters(filters):
    _filters.clear()
    _filters.update(filters)
    _wanted.clear()
    _update()


def pause():
    """Stops the program where it is: the main thread at once (a signal interrupts a call it
    waits in), any other at its next line."""
    global _pause
    _pause = True
    _update()
    if not MONITORING:
        _trace_every_frame()
    try:
        import signal

        signal.pthread_kill(_main_ident, _SIGNAL)
    except Exception:
        pass


def detach():
    """No more stops: debug-mcp let go (or this is a forked child, which runs undebugged)."""
    global _detached
    _detached = True
    _by_file.clear()
    _code_lines.clear()
    _wanted.clear()
    _filters.clear()
    _steps.clear()
    if MONITORING:
        events = sys.monitoring.events
        for event in _CALLBACKS:
            sys.monitoring.register_callback(_tool, getattr(events, event), None)
        sys.monitoring.set_events(_tool, 0)
    else:
        import threading

        sys.settrace(None)
        threading.settrace(None)


# -- stopping


def _stop(frame, reason, hits=None, exception=None, frames=None):
    """Stops this thread (the session waits for debug-mcp) and sets up the step it asks for."""
    global _pause, _entry
    ident = _thread.get_ident()
    step = _steps.pop(ident, None)
    if step is not None:
        step.quiet()
    if reason == "pause":
        _pause = False
    _entry = False
    was_busy = _busy()
    _local.busy = True
    _suspend_others()
    try:
        action = _session.stop(frame, reason, hits=hits, exception=exception, frames=frames)
    finally:
        _local.busy = was_busy
    if _detached:
        return
    kind = {"next": "over", "stepIn": "into", "stepOut": "out"}.get(action)
    if kind is not None and frame is not None:
        _steps[ident] = Step(kind, frame)
        if not MONITORING:
            frame.f_trace = _trace_local
    _update()


def _suspend_others():
    global _suspend
    _suspend = True
    _update()
    if not MONITORING:
        _trace_every_frame()


def resumed():
    """The stopped threads go on (debug-mcp continued or stepped one): the others too."""
    global _suspend
    _suspend = False
    _update()


def _trace_every_frame():
    for frame in sys._current_frames().values():
        while frame is not None:
            frame.f_trace = _trace_local
            frame = frame.f_back


def _at_line(frame, line):
    """A line is about to run in `frame`: stops there when something says so."""
    if hidden(frame):
        return
    if _suspend and not is_library(real(frame.f_code.co_filename)):
        # In the program's own code, where it shows what the thread was doing.
        _local.busy = True
        try:
            _session.park(frame)
        finally:
            _local.busy = False
    ident = _thread.get_ident()
    placed = _by_file.get(real(frame.f_code.co_filename))
    breakpoint = placed.get(line) if placed else None
    if breakpoint is not None:
        condition = breakpoint.condition
        if condition is not None:
            try:
                if isinstance(condition, SyntaxError) or not eval(condition, frame.f_globals,
                                                                  frame.f_locals):
                    breakpoint = None
            except BaseException:
                breakpoint = None
        if breakpoint is not None and breakpoint.log is not None:
            _local.busy = True
            try:
                _session.log(breakpoint.log, frame)
            finally:
                _local.busy = False
            breakpoint = None
    if breakpoint is not None:
        return _stop(frame, "breakpoint", hits=[breakpoint.id])
    step = _steps.get(ident)
    if step is not None:
        step.unwinding = None
        if step.arrived(frame):
            return _stop(frame, "step")
    if _pause and _take_pause():
        return _stop(frame, "pause")
    if _entry and is_main(frame):
        return _stop(frame, "entry")


def _take_pause():
    global _pause
    with _lock:
        due, _pause = _pause, False
    return due


_seen = _thread._local()


def _raised(frame, exception):
    """An exception is raised in `frame` (or passes through it): a stop for `raised` where it is
    raised, once."""
    if "raised" not in _filters or hidden(frame):
        return
    if isinstance(exception, (SystemExit, StopIteration, StopAsyncIteration, GeneratorExit)):
        return
    if getattr(_seen, "exception", None) is exception:
        return
    _seen.exception = exception
    path = real(frame.f_code.co_filename)
    if _pass_over and is_library(path) and path not in _keep:
        return
    _stop(frame, "exception", exception=(type(exception), exception, "always"))


def _unwound(frame, exception, traceback):
    """An exception leaves `frame`: a stop for `userUnhandled` when `frame` is the program's own
    code and its caller a library's (a web framework that answers 500 for it, a test runner),
    in `frame`, before it is gone. Once per exception."""
    if "userUnhandled" not in _filters or isinstance(exception, debug_mcp_probe.ENDINGS):
        return
    caller = frame.f_back
    if caller is None or hidden(frame) or hidden(caller):
        return
    if _is_library_code(frame.f_code) or not _is_library_code(caller.f_code):
        return
    if getattr(_seen, "unwound", None) is exception:
        return
    _seen.unwound = exception
    # Shown from where it was raised (the frames it left are done, their locals kept).
    raised = []
    while traceback is not None and traceback.tb_frame is not frame:
        traceback = traceback.tb_next
    while traceback is not None:
        raised.append((traceback.tb_frame, traceback.tb_lineno))
        traceback = traceback.tb_next
    raised.reverse()
    callers = []
    while frame is not None:
        callers.append((frame, frame.f_lineno))
        frame = frame.f_back
    frames = [(f, line) for f, line in raised[:-1] + callers if not hidden(f)]
    _stop(frames[0][0], "exception", exception=(type(exception), exception, "userUnhandled"),
          frames=frames)


def _is_library_code(code):
    """For `userUnhandled`: code of the standard library, an installed package, or one that
    has no file (`<string>`: what a library compiles, a dataclass's `__init__`)."""
    path = real(code.co_filename)
    return (is_library(path) or path.startswith("<")) and path not in _keep


def uncaught(kind, value, traceback):
    """An exception no one caught, at sys.excepthook or threading.excepthook: a stop where it
    was raised (the traceback's frames), when `uncaught` is watched (and it did not stop where
    it left the program's own code)."""
    if _detached or "uncaught" not in _filters or issubclass(kind, SystemExit):
        return
    if getattr(_seen, "unwound", None) is value:
        return
    frames = []
    while traceback is not None:
        frames.append((traceback.tb_frame, traceback.tb_lineno))
        traceback = traceback.tb_next
    frames.reverse()
    frames = [(f, line) for f, line in frames if not hidden(f)]
    if frames:
        _stop(frames[0][0], "exception", exception=(kind, value, "unhandled"), frames=frames)


def _on_signal(signum, frame):
    """The pause signal, in the main thread between two bytecodes (a sleep or a lock's wait is
    interrupted for it): the program stops in the frame it interrupted."""
    if not _pause or _busy() or frame is None:
        return
    _local.busy = True  # this handler's own calls are not the program's
    try:
        if _in_own_code(frame):
            return  # in a tracer's callback: the next line stops
    finally:
        _local.busy = False
    if _take_pause():
        _stop(frame, "pause")


def _in_own_code(frame):
    while frame is not None:
        if os.path.dirname(real(frame.f_code.co_filename)) == HELPERS:
            return True
        frame = frame.f_back
    return False


_SIGNAL = None
_main_ident = _thread.get_ident()


def install_pause_signal(number):
    global _SIGNAL
    import signal

    try:
        signal.signal(number, _on_signal)
        _SIGNAL = number
    except (ValueError, OSError):
        pass


# -- sys.monitoring (3.12+)

_tool = None
_CALLBACKS = ("PY_START", "PY_RESUME", "LINE", "PY_RETURN", "PY_YIELD", "PY_UNWIND", "RAISE",
              "INSTRUCTION")


def _start_monitoring():
    global _tool
    monitoring = sys.monitoring
    for tool in (monitoring.DEBUGGER_ID, 3, 4):
        if monitoring.get_tool(tool) is None:
            monitoring.use_tool_id(tool, "debug-mcp")
            _tool = tool
            break
    else:
        raise RuntimeError("every sys.monitoring tool id a debugger may take is in use")
    handlers = {"PY_START": _m_start, "PY_RESUME": _m_start, "LINE": _m_line,
                "PY_RETURN": _m_return, "PY_YIELD": _m_yield, "PY_UNWIND": _m_unwind,
                "RAISE": _m_raise, "INSTRUCTION": _m_instruction}
    for event in _CALLBACKS:
        monitoring.register_callback(_tool, getattr(monitoring.events, event), handlers[event])


def _m_start(code, offset):
    if _busy():
        return None
    if breakpoint_lines(code) or (_entry and code.co_name == "<module>"):
        events = sys.monitoring.events
        sys.monitoring.set_local_events(_tool, code, events.LINE)
        return None
    if _steps or _pause or _suspend:
        return None
    return sys.monitoring.DISABLE


def _m_line(code, line):
    if _busy():
        return None
    _at_line(sys._getframe(1), line)
    if _steps or _pause or _suspend or _entry or line in breakpoint_lines(code):
        return None
    return sys.monitoring.DISABLE


def _m_instruction(code, offset):
    if _busy():
        return None
    frame = sys._getframe(1)
    step = _steps.get(_thread.get_ident())
    if step is not None and step.watched is frame:
        _stop(frame, "step")
    return None


def _m_return(code, offset, value):
    _left(False)


def _m_yield(code, offset, value):
    _left(True)


def _m_unwind(code, offset, exception):
    _left(False)
    if not _busy():
        _unwound(sys._getframe(1), exception, exception.__traceback__)


def _left(yielded):
    step = _steps.get(_thread.get_ident())
    if step is not None and not _busy():
        step.left(sys._getframe(2), yielded)


def _m_raise(code, offset, exception):
    if not _busy():
        _raised(sys._getframe(1), exception)


# -- sys.settrace (before 3.12)


def _trace_call(frame, event, arg):
    """The global trace function: called at every call, so its common way is one lookup."""
    if _steps or _pause or _suspend or _entry:
        return _trace_call_stepping(frame)
    wants = _wanted.get(frame.f_code)
    if wants is None:
        wants = _wanted[frame.f_code] = _wants_lines(frame.f_code)
    return _trace_local if wants else None


# Per code object, whether its frames need the local tracer (no step, pause or entry due).
_wanted = {}


def _wants_lines(code):
    if _detached:
        return False
    if breakpoint_lines(code):
        return True
    if "userUnhandled" in _filters and not _is_library_code(code):
        return True
    return "raised" in _filters and not (_pass_over and is_library(real(code.co_filename)))


def _trace_call_stepping(frame):
    if _busy() or _detached:
        return None
    code = frame.f_code
    if (_thread.get_ident() in _steps or _pause or _suspend
            or (_entry and code.co_name == "<module>")):
        return _trace_local
    return _trace_local if _wants_lines(code) else None


def _trace_local(frame, event, arg):
    if _busy() or _detached:
        return None
    if event == "line":
        _at_line(frame, frame.f_lineno)
    elif event == "return":
        step = _steps.get(_thread.get_ident())
        if step is not None:
            step.left(frame, step.unwinding is not frame and _yields(frame))
        left = debug_mcp_probe.unwound(_seen, frame, arg)
        if left is not None:
            _unwound(frame, *left)
    elif event == "opcode":
        step = _steps.get(_thread.get_ident())
        if step is not None and step.watched is frame:
            _stop(frame, "step")
    elif event == "exception":
        step = _steps.get(_thread.get_ident())
        if step is not None:
            step.unwinding = frame
        if "userUnhandled" in _filters:
            _seen.thrown = (frame, arg[1], arg[2])
        _raised(frame, arg[1])
    return _trace_local


def _yields(frame):
    """Whether a generator's or coroutine's frame leaves at a `yield` or an `await` rather than
    for good (the settrace `return` event says neither)."""
    if not frame.f_code.co_flags & 0x2A0:  # generator, coroutine, async generator
        return False
    return not debug_mcp_probe.at_return(frame)


# -- keeping the events to what is needed


def _update():
    """Turns on the events the breakpoints, filters, steps and pause need (3.12+)."""
    if not MONITORING or _detached:
        return
    events = sys.monitoring.events
    wanted = 0
    if _by_file or _entry:
        wanted |= events.PY_START | events.PY_RESUME
    if "raised" in _filters:
        wanted |= events.RAISE
    if "userUnhandled" in _filters:
        wanted |= events.PY_UNWIND
    if _steps or _pause or _suspend:
        wanted |= events.LINE | events.PY_RETURN | events.PY_YIELD | events.PY_UNWIND
        # Lines disabled while nothing stepped report again.
        sys.monitoring.restart_events()
    sys.monitoring.set_events(_tool, wanted)


def _refresh():
    """After the breakpoints changed: code objects that now hold one, including those already
    running, watch their lines."""
    if MONITORING:
        _update()
        sys.monitoring.restart_events()
    for frame in sys._current_frames().values():
        while frame is not None:
            if breakpoint_lines(frame.f_code):
                if MONITORING:
                    sys.monitoring.set_local_events(_tool, frame.f_code, sys.monitoring.events.LINE)
                else:
                    frame.f_trace = _trace_local
            frame = frame.f_back
