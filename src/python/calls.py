"""debug-mcp's traced calls for a `debug-script` run with `calls`: every call of the functions
asked for (those of a file, or one by name), in the order they started, with its arguments
and its return value or the exception it raised. Imported by the tracer (`debug_mcp_trace`)
only when the plan has calls.

Each call's record: `{call, function, file, line, depth, parent?, args, return | threw}`; `call`
numbers the calls of this process as they start, `depth` is the nesting among traced calls on
its thread (the call tree) and `parent` the traced call it started in. A generator's or a
coroutine's call is one from its first start to its end, through every yield and await: its
`return` is what it returned (a coroutine: what it resolved to). A record is sent once its call
ends, a batch at a time (`calls [records] {function: omitted}`); calls still running when the
program is killed for hanging, or exits, are sent without an end.

How calls are seen: a module imported from its source, and the main script, are compiled with
calls to `enter`, `ret` and `threw` in their traced functions (`rewrite`, through the tracer's
import hook; 3.8+). Elsewhere (a module another loader compiles, such as a test file pytest
rewrites), on CPython 3.12+ `sys.monitoring` under a tool id of our own: PY_START for every
code object once (disabled at once for those not traced), then PY_RETURN only for the traced
ones, and PY_UNWIND (a global event: an exception leaving any function, rare); before 3.12 the
tracer's `sys.settrace` function hands the call and return events of traced code here
(`traced()`). A call's parent is the nearest traced call below it among its thread's frames.
"""

import _thread
import itertools
import os
import sys
import time

import debug_mcp_probe

_send = None
_preview = None
_syntax = None
_rewritten = ()
_cap = 0
_targets = []  # (real path, function name or None)
_matched = {}  # code object -> whether traced
_files = {}  # file name -> whether some target is in it
_numbers = itertools.count(1)  # numbers the calls as they start (atomic under the GIL)
_recorded = 0  # calls recorded (at most `_cap`)
# Whether a call may still be recorded (`_recorded < _cap`): read by rewritten functions, which
# past the cap only count their calls, inline (calling `enter` and `ret` cost a call ~2,000
# instructions, the inline count ~1,400: valgrind, 3.11).
room = True
# function -> calls past the cap not reported yet (a rewritten function's name is in it from
# the start, at 0: its code adds to it inline).
_omitted = {}
_live = {}  # id(frame) -> record: started, not ended (a suspended generator too)
_done = []  # ended records not sent yet
_sent_at = 0.0
_local = _thread._local()
# Before 3.12, each return event's instruction is read: RETURN_VALUE is the last of
# `lambda: None` (2 bytes an instruction from 3.6); the yields are read from opcode when a
# generator's first return event comes (importing opcode costs a start ~0.9 ms).
_RETURN = (lambda: None).__code__.co_code[-2]
_SUSPENDABLE = 0x20 | 0x80 | 0x100 | 0x200  # generator, coroutine, iterable coroutine, async gen
_ARGS = 0x04 | 0x08  # *args, **kwargs
_NOT_FUNCTIONS = ("<module>", "<listcomp>", "<setcomp>", "<dictcomp>", "<genexpr>")
_FLUSH_EVERY = 0.05  # seconds
_BATCH = 256


def setup(plan, send, preview, syntax, rewritten):
    """`plan["calls"]`: `[{real, function?}]`; `send(kind, *fields)` reports; `preview(value)`
    is a value's short text; `syntax()` loads debug_mcp_syntax (modules are read); `rewritten`
    holds the code objects compiled with their calls (`rewrite`)."""
    global _send, _preview, _cap, _syntax, _rewritten, room
    _send, _preview, _syntax, _rewritten = send, preview, syntax, rewritten
    _cap = plan.get("maxCalls", 200)
    room = _cap > 0
    for target in plan["calls"]:
        _targets.append((target["real"], target.get("function")))
    import atexit

    atexit.register(flush, True)
    if hasattr(sys, "monitoring"):
        _watch_with_monitoring()


def in_file(filename):
    """Whether some traced function may be in this file (tracing starts when it first runs)."""
    found = _files.get(filename)
    if found is None:
        real = os.path.realpath(filename)
        found = _files[filename] = any(real == file for file, _ in _targets)
    return found


def _traced(code):
    """What a traced function's calls say of it, `(function, file, line, argument names)`, or
    False (not traced)."""
    found = _matched.get(code)
    if found is None:
        found = False
        name = code.co_name
        # A function's code is optimized; a module's and a class body's are not.
        if code.co_flags & 0x01 and name not in _NOT_FUNCTIONS and in_file(code.co_filename):
            qualname = _qualname(code)
            real = os.path.realpath(code.co_filename)
            if any(real == file and (function is None or function in (name, qualname))
                   for file, function in _targets):
                flags = code.co_flags
                count = code.co_argcount + code.co_kwonlyargcount + bool(flags & 0x04) \
                    + bool(flags & 0x08)
                found = (qualname, os.path.abspath(code.co_filename), code.co_firstlineno,
                         code.co_varnames[:count])
        _matched[code] = found
    return found


def _qualname(code):
    """`Cart.total`, `outer.<locals>.inner`: code objects say it from 3.11; before, it is read
    from the file's source (once per file), by the line the function starts on."""
    qualname = getattr(code, "co_qualname", None)
    if qualname is not None:
        return qualname
    names = _qualnames.get(code.co_filename)
    if names is None:
        names = _qualnames[code.co_filename] = _read_qualnames(code.co_filename)
    return names.get((code.co_firstlineno, code.co_name), code.co_name)


_qualnames = {}  # file name -> {(first line, name): qualified name}


def _read_qualnames(filename):
    try:
        with open(filename, "rb") as f:
            tree = _syntax().parse(f.read(), filename)
    except Exception:
        return {}
    return _names(_definitions(tree))


def _definitions(tree):
    """Every function and lambda the module `tree` defines, with its qualified name, as
    Python names them (`Cart.total`, `outer.<locals>.inner`, `f.<locals>.<lambda>`)."""
    from _ast import AsyncFunctionDef, ClassDef, FunctionDef, Lambda

    found = []
    syntax = _syntax()

    def visit(node, prefix):
        for child in syntax.children(node):
            if isinstance(child, (FunctionDef, AsyncFunctionDef, Lambda)):
                qualname = prefix + getattr(child, "name", "<lambda>")
                found.append((child, qualname))
                visit(child, qualname + ".<locals>.")
            else:
                visit(child, prefix + child.name + "." if isinstance(child, ClassDef) else prefix)

    visit(tree, "")
    return found


def _names(definitions):
    """`{(first line, name): qualified name}` of `_definitions`: a decorated function's code
    starts at its first decorator (3.8+) or at `def`."""
    names = {}
    for node, qualname in definitions:
        name = getattr(node, "name", "<lambda>")
        for line in [node.lineno] + [d.lineno for d in getattr(node, "decorator_list", ())]:
            names[(line, name)] = qualname
    return names


def _parent(frame):
    """The traced call running nearest below `frame` on its thread (the call tree's parent):
    a suspended generator or coroutine is not on the chain, as it is not on the stack."""
    frame = frame.f_back
    while frame is not None:
        record = _live.get(id(frame))
        if record is not None:
            return record
        frame = frame.f_back
    return None


def _start(code, frame):
    """A traced call starts (before 3.12, a suspended one also resumes here: nothing to do)."""
    global _recorded, room
    if id(frame) in _live:
        return
    function, file, line, names = _matched[code]
    if _recorded >= _cap:
        _omitted[function] = _omitted.get(function, 0) + 1
        return
    if getattr(_local, "busy", False):
        return
    _recorded += 1
    room = _recorded < _cap
    _local.busy = True
    try:
        parent = _parent(frame)
        record = {"call": next(_numbers), "function": function, "file": file, "line": line,
                  "depth": parent["depth"] + 1 if parent else 0}
        if parent:
            record["parent"] = parent["call"]
        values = frame.f_locals
        args = record["args"] = {}
        for name in names:
            if name in values:
                args[name] = _preview(values[name])
        _live[id(frame)] = record
    finally:
        _local.busy = False


def _end(frame, key, value):
    """A traced call returns (`key` "return", its value) or raises ("threw", the exception)."""
    record = _live.pop(id(frame), None)
    if record is None:
        return
    if _lambdas:
        _lambdas.pop(id(frame), None)
    _local.busy = True
    try:
        if key == "return":
            record["return"] = _preview(value)
        else:
            message = str(value)
            if len(message) > 200:
                message = message[:200] + "…"
            record["threw"] = {"type": type(value).__name__, "message": message}
    except Exception:
        pass
    finally:
        _local.busy = False
    _done.append(record)
    if len(_done) >= _BATCH or time.monotonic() - _sent_at > _FLUSH_EVERY:
        flush()


def forked():
    """A forked child: the calls so far were its parent's, and are reported by it."""
    global _numbers, _recorded, room
    _done[:] = []
    _live.clear()
    _take_omitted()
    _numbers = itertools.count(1)
    _recorded = 0
    room = _cap > 0


def flush(ending=False):
    """Sends the ended calls (and, `ending`: those still running, without an end)."""
    global _sent_at
    from debug_mcp_probe import dumps

    if ending and _lambdas:
        _lambdas_ended()
    records, _done[:] = list(_done), []
    if ending:
        records.extend(_live.values())
        _live.clear()
    _sent_at = time.monotonic()
    if records or (ending and any(_omitted.values())):
        _send("calls", dumps(records, False, check_circular=False), dumps(_take_omitted()))


def _take_omitted():
    """The calls past the cap counted since the last report, by function (the server adds them
    up); from now on counted from 0."""
    counted = {}
    for function, count in list(_omitted.items()):
        if count:
            counted[function] = count
            _omitted[function] -= count  # a thread may add one meanwhile
    return counted


# First: a module imported from its source, and the main script, get their traced functions
# compiled with calls to those below (`rewrite`), and the program runs untraced (sys.settrace
# slows every call of it: ~1.5x by itself; sys.monitoring's callback costs a call 0.46 us on
# 3.13, a rewritten function's count past the cap ~0.1 us). Elsewhere (a module another loader
# compiles, one whose rewrite does not compile, such as an async generator's bare `return` made
# `return ret(None)`) sys.settrace (`traced`) or sys.monitoring serves.

HOOK = "__debug_mcp_calls__"  # this module, as a builtin (a dunder name: not mangled in classes)


def enter(function):
    """A rewritten function's first statement (a lambda's first call); `function` its qualified
    name."""
    if _recorded >= _cap:
        _omitted[function] = _omitted.get(function, 0) + 1
        return None
    frame = sys._getframe(1)
    code = frame.f_code
    if _matched.get(code) is None:
        _traced(code)
    if _matched[code]:
        _start(code, frame)
        if code.co_name == "<lambda>" and id(frame) in _live:
            _lambdas[id(frame)] = frame
    return None


def ret(value):
    """A rewritten function's `return value` (and its end)."""
    if _live:
        _end(sys._getframe(1), "return", value)
    return value


def threw():
    """An exception leaves a rewritten function."""
    if _live:
        kind, error, tb = sys.exc_info()
        if _lambdas:
            _unwound(tb.tb_next, error)
        _end(sys._getframe(1), "threw", error)


def caught():
    """A rewritten function of a file with traced lambdas catches an exception."""
    if _lambdas:
        kind, error, tb = sys.exc_info()
        _unwound(tb, error)


def _unwound(tb, error):
    """The traced lambdas an exception went through (they have no `except` of their own): each
    ended by it."""
    while tb is not None:
        if _lambdas.get(id(tb.tb_frame)) is tb.tb_frame:
            _end(tb.tb_frame, "threw", error)
        tb = tb.tb_next


def _lambdas_ended():
    """At the end: traced lambdas that an exception left where no traced function saw it (the
    program's uncaught one; else caught by code not traced: its type unknown)."""
    _unwound(getattr(sys, "last_traceback", None), getattr(sys, "last_value", None))
    for frame in list(_lambdas.values()):
        try:
            frame.clear()  # refused while the frame runs (another thread's)
        except RuntimeError:
            continue
        record = _live.pop(id(frame), None)
        _lambdas.pop(id(frame), None)
        if record is not None:
            record["threw"] = {"type": "unknown",
                               "message": "an exception left it; code not traced caught it"}
            _done.append(record)


_lambdas = {}  # id(frame) -> frame: traced lambdas running (kept alive: their ids stay theirs)


def rewrite(tree, path):
    """Rewrites the module `tree` of the file `path` for its traced functions' calls:
        def f(a):                 def f(a):
            "doc"                     "doc"
            BODY                      if __debug_mcp_calls__.room:
                                          __debug_mcp_calls__.enter("f")
                                      else:
                                          …._omitted["f"] += 1
                                      try:
                                          BODY (`return X`: `return ….ret(X) if …._live else X`)
                                          if …._live:
                                              ….ret(None)
                                      except:
                                          ….threw()
                                          raise
        lambda a: X               lambda a: ….enter("<lambda>") or ….ret(X)
    Past the cap (no `room`), while no recorded call runs (`_live` empty), a call costs two
    tests and a count, without a call of ours.
    Generators and coroutines need nothing more: their first statement runs once, at their first
    start, and the call tree's parent is read from the frames below. A lambda has no `except`:
    an exception that leaves it is found in the traceback where a rewritten function sees it
    (its `except` clauses call `caught()` when the file has traced lambdas). The qualified names
    found are kept for `_qualname` (before 3.11 it would parse the file again). True."""
    from _ast import (AsyncFunctionDef, BoolOp, ClassDef, Constant, ExceptHandler, Expr,
                      FunctionDef, If, IfExp, Lambda, Or, Raise, Return, Try, Yield, YieldFrom)

    syntax = _syntax()
    wanted = functions_wanted(path)
    functions = (FunctionDef, AsyncFunctionDef)
    definitions = _definitions(tree)
    _qualnames[path] = _names(definitions)
    found = []
    lambdas = []
    for node, qualname in definitions:
        name = getattr(node, "name", "<lambda>")
        if None in wanted or name in wanted or qualname in wanted:
            if not isinstance(node, Lambda):
                found.append((node, qualname))
            elif not any(isinstance(n, (Yield, YieldFrom)) for n in syntax.walk(node.body)):
                lambdas.append((node, qualname))

    def live():
        return syntax.dotted(HOOK, "_live")

    def returns(node):
        for child in syntax.children(node):
            if isinstance(child, functions + (Lambda, ClassDef)):
                continue  # another function's returns
            if isinstance(child, Return):
                value = child.value or Constant(None)
                child.value = IfExp(live(), syntax.call(HOOK, "ret", value), value)
                syntax.place(child, child)
            elif isinstance(child, ExceptHandler) and lambdas:
                caught = Expr(syntax.call(HOOK, "caught"))
                syntax.place(caught, child.body[0])
                child.body.insert(0, caught)
            returns(child)

    for function, qualname in found:
        body = function.body
        first = body[0]
        docstring = (isinstance(first, Expr) and isinstance(first.value, Constant)
                     and isinstance(first.value.value, str))
        head = body[:1] if docstring else []
        rest = body[len(head):]
        returns(function)
        where = rest[0] if rest else first
        handler = ExceptHandler(None, None, [Expr(syntax.call(HOOK, "threw")), Raise(None, None)])
        end = If(live(), [Expr(syntax.call(HOOK, "ret", Constant(None)))], [])
        enter = If(syntax.dotted(HOOK, "room"), [Expr(syntax.call(HOOK, "enter", Constant(qualname)))],
                   [syntax.count(HOOK, "_omitted", qualname)])
        added = [enter, Try(rest + [end], [handler], [], [])]
        for node in added:
            syntax.place(node, where)
        function.body = head + added
    for function, qualname in lambdas:
        calls = [syntax.call(HOOK, "enter", Constant(qualname)), syntax.call(HOOK, "ret", function.body)]
        function.body = BoolOp(Or(), calls)
        syntax.place(function.body, function)
    learn(path, (_qualnames[path], [qualname for _, qualname in found]))
    return True


def functions_wanted(path):
    """The functions of the file `path` traced, as the plan names them (None: every one)."""
    real = os.path.realpath(path)
    return [function for file, function in _targets if file == real]


def learnt(path):
    """What `rewrite` learnt of the file `path` that the code it made does not hold (kept with
    it, `learn` again): the qualified names by line (before 3.11 read from the file), and the
    functions whose code counts their calls past the cap in `_omitted`."""
    return _qualnames.get(path), _counting.get(path, [])


def learn(path, learnt):
    names, counting = learnt
    if names is not None:
        _qualnames[path] = names
    _counting[path] = counting
    for qualname in counting:
        _omitted.setdefault(qualname, 0)


_counting = {}  # file name -> the qualified names of its functions rewritten


# Before 3.12: the tracer's trace function hands traced frames here.

def traced(frame, event, arg, probes):
    """The local trace function for a frame whose `call` event this is, or None (not traced);
    `probes` is the trace's own local trace function for the frame (probes, exceptions
    leaving it), which sees every event too."""
    code = frame.f_code
    info = _traced(code)
    if not info:
        return None
    if _recorded >= _cap and id(frame) not in _live:
        # Past the cap: counted, and its return not watched.
        _omitted[info[0]] = _omitted.get(info[0], 0) + 1
        return probes
    _start(code, frame)
    suspendable = code.co_flags & _SUSPENDABLE
    # `co_code` is built anew at each read from 3.11: read once per code object.
    instructions = _instructions.get(code)
    if instructions is None:
        instructions = _instructions[code] = code.co_code
    if probes is None and sys.version_info >= (3, 7):
        frame.f_trace_lines = False  # only call, return and exception events (3.7+)

    def local(frame, event, arg):
        if event == "return":
            error = _pending.pop(id(frame), None)
            at = frame.f_lasti
            if 0 <= at < len(instructions) and instructions[at] == _RETURN:
                _end(frame, "return", arg)
            elif suspendable and debug_mcp_probe.suspended(instructions, at):
                pass  # a yield or an await: the call goes on
            elif error is not None:
                _end(frame, "threw", error)
            else:
                _end(frame, "return", arg)
        elif event == "exception":
            _pending[id(frame)] = arg[1]
        if probes is not None:
            probes(frame, event, arg)
        return local

    return local


_instructions = {}  # code object -> its co_code
_pending = {}  # id(frame) -> the exception last raised in it, until it returns


# CPython 3.12 and later: sys.monitoring, a tool id of our own.

def _watch_with_monitoring():
    monitoring = sys.monitoring
    tool = next((t for t in (4, 3, 5, 2, 1) if monitoring.get_tool(t) is None), None)
    if tool is None:
        return
    monitoring.use_tool_id(tool, "debug-mcp calls")
    events = monitoring.events
    DISABLE = monitoring.DISABLE
    local_events = events.PY_RETURN
    getframe = sys._getframe

    def on_start(code, offset):
        info = _matched.get(code)
        if info is None:
            info = _traced(code) if code not in _rewritten else False
        if not info:
            return DISABLE
        if _recorded >= _cap:
            # Past the cap, a call is only counted (PY_START always starts a new call here).
            _omitted[info[0]] = _omitted.get(info[0], 0) + 1
            return
        if code not in _local_set:
            _local_set.add(code)
            monitoring.set_local_events(tool, code, local_events)
        _start(code, getframe(1))

    def on_return(code, offset, value):
        _end(getframe(1), "return", value)
        if _recorded >= _cap and not _live and _local_set:
            # Nothing recorded is running: no return is watched any more.
            for traced in _local_set:
                monitoring.set_local_events(tool, traced, 0)
            _local_set.clear()

    def on_unwind(code, offset, error):
        if _matched.get(code) and code not in _rewritten:
            _end(getframe(1), "threw", error)

    monitoring.register_callback(tool, events.PY_START, on_start)
    monitoring.register_callback(tool, events.PY_RETURN, on_return)
    monitoring.register_callback(tool, events.PY_UNWIND, on_unwind)
    monitoring.set_events(tool, events.PY_START | events.PY_UNWIND)


_local_set = set()
