"""debug-mcp's report of where every thread of a Python process is, for a `debug-script` run
about to kill the program for hanging (its timeout, or no hit, output or process change for
`hang`). Imported by the tracer's signal handler only when asked (`debug_mcp_trace._hang`, run
by the main thread: its own frames, ours, are left out).

Each thread: its name, what its top line waits on when the code says it (a lock's `acquire`, a
`join`, a queue's `get`, a `sleep`: a call into C has no Python frame of its own), and its
frames top first, `own` for the program's, the locals of the first `limit` own ones. The server
builds the answer's record (debugger/hang.rs): the program's frames listed, the rest counted.
"""

import _thread
import inspect
import linecache
import os
import re
import sys

_HELPERS = os.path.dirname(os.path.abspath(__file__))

# What a line's call waits on, by the words it holds (first match).
_WAITS = (
    ((".acquire(", "with lock", "_lock:", "lock:"), "lock"),
    ((".join(",), "join"),
    (("sleep(",), "sleep"),
    ((".wait(",), "condition wait"),
    ((".get(",), "channel receive"),
    ((".put(",), "channel send"),
    ((".recv(", ".accept(", ".read(", ".readline(", "input(", "select("), "I/O"),
)


def threads(own, locals_of, limit):
    """Every thread: `{thread, state?, frames: [{function, file, line, own, locals?}]}` each
    (`own(filename)`, `locals_of(frame)`)."""
    # Called in a signal handler, so by the main thread: its name without `threading`.
    names = {_thread.get_ident(): "MainThread"}
    threading = sys.modules.get("threading")
    if threading is not None:
        try:
            names.update((t.ident, t.name) for t in threading.enumerate())
        except Exception:
            pass
    found = []
    for ident, frame in sys._current_frames().items():
        frames = []
        own_listed = 0
        top = None
        while frame is not None:
            code = frame.f_code
            filename = code.co_filename
            if os.path.dirname(os.path.abspath(filename)) != _HELPERS:
                mine = own(filename)
                entry = {"function": getattr(code, "co_qualname", code.co_name),
                         "file": os.path.abspath(filename), "line": frame.f_lineno, "own": mine}
                if mine and own_listed < limit:
                    entry["locals"] = locals_of(frame)
                    own_listed += 1
                if top is None:
                    top = (frame, mine)
                frames.append(entry)
            frame = frame.f_back
        record = {"thread": names.get(ident, str(ident)), "frames": frames}
        state = _waits_on(*top) if top else None
        if state:
            record["state"] = state
        found.append(record)
    return found


def _waits_on(frame, mine):
    """What the program's own top line waits on, when its text says (a library's top frame
    says it by its function's name, read by the server): a `with` of a lock (its name looked
    up, never called), or a call that waits."""
    if not mine:
        return None
    text = linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip()
    entered = re.match(r"(?:async\s+)?with\s+([A-Za-z_][\w.]*)\s*(?::|as\b)", text)
    if entered and _is_lock(frame, entered.group(1)):
        return "lock"
    for words, state in _WAITS:
        if any(word in text for word in words):
            return state
    return None


def _is_lock(frame, name):
    """Whether `name` (`lock`, `self.lock`) in `frame` is a lock, a semaphore or a condition."""
    head, *rest = name.split(".")
    scopes = (frame.f_locals, frame.f_globals, frame.f_builtins)
    value = next((scope[head] for scope in scopes if head in scope), None)
    try:
        for attribute in rest:
            value = inspect.getattr_static(value, attribute)
    except AttributeError:
        return False
    kind = type(value).__name__.lower()
    return any(word in kind for word in ("lock", "semaphore", "condition"))
