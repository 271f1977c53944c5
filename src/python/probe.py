"""debug-mcp's probe for Python programs (written next to sitecustomize.py, first on PYTHONPATH).

A logpoint's message calls `hit` with the expression, Base64-encoded so that no `{` or `}`
reaches debugpy's message parser. `hit` evaluates it in the caller's frame (the one the
logpoint evaluates in: the program's globals and locals) and returns a marker and the JSON of
{type, value}: the value itself when JSON can hold it, else its repr, cut to a budget.
"""

import sys

MARKER = "\x1edmcp:"
MAX_CHARS = 65536

try:
    # json's C half, without json itself: importing json imports re and enum (~13 ms of a
    # program's start, measured on 3.11), which a program traced may never need.
    import _json

    class _Context:
        strict = True
        object_hook = None
        object_pairs_hook = None
        parse_float = float
        parse_int = int
        parse_constant = float
        memo = {}

    def _refuse(value):
        raise TypeError("%s is not JSON serializable" % type(value).__name__)

    def dumps(value, ensure_ascii=True, allow_nan=True, check_circular=True):
        """json.dumps(value) as compact text; `check_circular=False` for what is known to hold
        no cycle (each container is then not remembered: 1.7x as fast on traced calls)."""
        text = _json.encode_basestring_ascii if ensure_ascii else _json.encode_basestring
        markers = {} if check_circular else None
        encoder = _json.make_encoder(markers, _refuse, text, None, ":", ",", False, False, allow_nan)
        return "".join(encoder(value, 0))

    def loads(text):
        value, end = _json.make_scanner(_Context())(text, 0)
        if text[end:].strip():
            raise ValueError("extra data after JSON")
        return value

except (ImportError, AttributeError):
    import json

    def dumps(value, ensure_ascii=True, allow_nan=True, check_circular=True):
        return json.dumps(value, ensure_ascii=ensure_ascii, allow_nan=allow_nan,
                          check_circular=check_circular, separators=(",", ":"))

    loads = json.loads


def _cut(text, limit):
    if len(text) <= limit:
        return text, False
    return text[:limit] + "… [truncated: %d chars]" % len(text), True


def safe_repr(value):
    """`repr(value)`, or what its broken `__repr__` raised."""
    try:
        return repr(value)
    except BaseException as e:
        return "<unrepresentable: %s: %s>" % (type(e).__name__, e)


def encode(value, limit=MAX_CHARS):
    """`T` or `F` (was the value cut?) and the JSON of {type, value}, within `limit`."""
    kind = type(value).__name__
    try:
        text = dumps(value, ensure_ascii=False, allow_nan=False)
        if len(text) <= limit:
            return "F" + '{"type": %s, "value": %s}' % (dumps(kind), text)
    except (TypeError, ValueError, RecursionError):
        text = None
    shown, cut = _cut(safe_repr(value) if text is None else text, limit)
    return ("T" if cut else "F") + dumps({"type": kind, "value": shown}, ensure_ascii=False)


def hit(expression_b64, limit=MAX_CHARS):
    import base64

    expression = base64.b64decode(expression_b64).decode("utf-8")
    frame = sys._getframe(1)
    try:
        value = eval(expression, frame.f_globals, frame.f_locals)
    except BaseException as e:
        message = "%s: %s" % (type(e).__name__, e)
        return MARKER + "F" + dumps({"type": "error", "value": message}, ensure_ascii=False)
    return MARKER + encode(value, limit)


def line_starts(code):
    """The lines a code object's own instructions start (as dis.findlinestarts says)."""
    if hasattr(code, "co_lines"):
        return set(line for _, _, line in code.co_lines() if line is not None)
    # Before 3.10, co_lnotab's pairs (bytecode, line increments), read as dis.findlinestarts
    # reads them (importing dis would cost every run its start).
    lines = set()
    table = code.co_lnotab
    line = code.co_firstlineno
    last = None
    for i in range(0, len(table), 2):
        if table[i]:
            if line != last:
                lines.add(line)
                last = line
        step = table[i + 1]
        line += step - 0x100 if step >= 0x80 else step
    lines.add(line)
    return lines


def code_lines(code):
    """Every line a code object and those nested in it start."""
    for line in line_starts(code):
        yield line
    for const in code.co_consts:
        if isinstance(const, type(code)) and const.co_filename == code.co_filename:
            yield from code_lines(const)


def lines_with_code(path):
    """The lines of a source file that hold code, or None when it cannot be read or compiled."""
    try:
        # Bytes: compile reads the encoding cookie itself (tokenize would import re, enum,
        # functools and collections into a program that may use none: ~7 ms of every start).
        with open(path, "rb") as f:
            source = f.read()
        code = compile(source, path, "exec", 0, True)
    except Exception:
        return None
    return set(code_lines(code))


LOGPOINT = "\x1elp:"


# How a program or a generator ends, not an error: never a failure nor a stop of its own.
ENDINGS = (SystemExit, KeyboardInterrupt, StopIteration, StopAsyncIteration, GeneratorExit)

_RETURNS = None
_YIELDS = None
_YIELD_FROM = None


def _opcodes(*names):
    import opcode

    return frozenset(opcode.opmap[name] for name in names if name in opcode.opmap)


def _last_in(frame, opcodes):
    code = frame.f_code.co_code
    return frame.f_lasti < len(code) and code[frame.f_lasti] in opcodes


def at_return(frame):
    """Whether `frame`'s last instruction returns (at a settrace `return` event: it leaves for
    good, not at a `yield` or an `await`, nor for an exception)."""
    global _RETURNS
    if _RETURNS is None:
        _RETURNS = _opcodes("RETURN_VALUE", "RETURN_CONST")
    return _last_in(frame, _RETURNS)


def suspended(code, at):
    """Whether a generator's or coroutine's `return` event at instruction offset `at` of
    `code` (its bytes) is a yield (before 3.12). Before 3.11 a frame suspended at
    `yield from` / `await` points at the instruction before it."""
    global _YIELDS, _YIELD_FROM
    if _YIELDS is None:
        import opcode

        _YIELDS = {opcode.opmap.get("YIELD_VALUE"), opcode.opmap.get("YIELD_FROM")} - {None}
        _YIELD_FROM = opcode.opmap.get("YIELD_FROM")
    if at < 0 or at >= len(code):
        return False
    if code[at] in _YIELDS:
        return True
    return _YIELD_FROM is not None and at + 2 < len(code) and code[at + 2] == _YIELD_FROM


def unwinding(frame):
    """At a settrace `return` event: whether `frame` leaves for an exception (its last
    instruction is then the one that raised), not returning or yielding."""
    return not (at_return(frame) or suspended(frame.f_code.co_code, frame.f_lasti))


def unwound(seen, frame, arg):
    """At a settrace `return` event of `frame`: `(exception, traceback)` when it leaves for the
    exception its `exception` event kept in `seen.thrown` (`(frame, exception, traceback)`)."""
    thrown = getattr(seen, "thrown", None)
    if thrown is None or thrown[0] is not frame:
        return None
    seen.thrown = None
    return thrown[1:] if arg is None and unwinding(frame) else None


def mark(breakpoint_id):
    """The start of a logpoint's message: whose it is (debugpy does not say)."""
    return LOGPOINT + breakpoint_id + "\x1e"


def part(expression_b64, conversion="", spec_b64=""):
    """One `{expression}` of a logpoint's message, as an f-string would give it (`!r`, `:.2f`);
    an error becomes `<NameError: ...>` in its place, not the whole message's."""
    import base64

    expression = base64.b64decode(expression_b64).decode("utf-8")
    spec = base64.b64decode(spec_b64).decode("utf-8")
    frame = sys._getframe(1)
    try:
        value = eval(expression, frame.f_globals, frame.f_locals)
        if conversion == "r":
            value = repr(value)
        elif conversion == "a":
            value = ascii(value)
        elif conversion == "s":
            value = str(value)
        return format(value, spec)
    except BaseException as e:
        return "<%s: %s>" % (type(e).__name__, e)


def nodelay():
    """TCP_NODELAY for pydevd's socket to debugpy's adapter, in a program that did not load
    debug-mcp's sitecustomize.py (one attached to, or run with -I, -E or -S)."""
    try:
        import socket

        import pydevd

        sock = pydevd.get_global_debugger().writer.sock
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    except Exception:  # another pydevd: only slower
        pass
