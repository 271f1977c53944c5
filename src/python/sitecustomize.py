"""debug-mcp's, first on the debuggee's PYTHONPATH: runs debug_mcp_site.py. Python reads this
file compiled from our own __pycache__ (`_cache_self`); it only loads the others, compiled
once."""

import os


def load_own(name):
    """Imports debug-mcp's module `name` from this directory, its code compiled once per server
    and Python version and kept here (marshal), where no one else writes (the server keeps it
    in the user's cache for the next, `helpers.rs`)."""
    import marshal
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(here, name + ".py")
    # The bytecode's version, as .pyc files carry it (a release candidate's may differ).
    magic = getattr(sys.modules.get("_frozen_importlib_external"), "MAGIC_NUMBER", b"")
    tag = sys.implementation.cache_tag
    kept = os.path.join(here, "%s.%s-%s.code" % (name, tag, magic.hex())) if tag else None
    try:
        with open(kept, "rb") as f:
            code = marshal.loads(f.read())  # marshal.load reads in small pieces: 8x slower
        if code.co_filename != path:
            # Compiled by an earlier server, in its own directory: kept again with ours.
            code = _moved(code, path)
            _keep(kept, marshal.dumps(code))
    except (TypeError, OSError, EOFError, ValueError, AttributeError):
        with open(path, "rb") as f:
            code = compile(f.read(), path, "exec")
        if kept:
            _keep(kept, marshal.dumps(code))
    module = type(sys)(name)
    module.__file__ = path
    sys.modules[name] = module
    try:
        exec(code, module.__dict__)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def _keep(kept, data):
    """Writes `data` at `kept` whole or not at all (another process may read it meanwhile)."""
    try:
        part = "%s.%d" % (kept, os.getpid())
        with open(part, "wb") as f:
            f.write(data)
        os.replace(part, kept)
    except OSError:
        pass


def _moved(code, path):
    """`code` and the functions' in it with `path` for their file (3.8+: code.replace), so that
    our frames are known as ours and tracebacks name the file."""
    consts = tuple(_moved(c, path) if type(c) is type(code) else c for c in code.co_consts)
    return code.replace(co_filename=path, co_consts=consts)


def _cache_self():
    """Writes this file's code where Python's next start reads it: an unchecked hash-based .pyc
    (PEP 552: valid while this file is unchanged, as it is while the server runs) in our
    __pycache__, whatever PYTHONDONTWRITEBYTECODE says (it keeps a program's own folders clean;
    this one is ours). Compiling this file cost each start 0.6 ms, and the first compile() of a
    process ~2 ms more (it makes the AST's types: measured on 3.11), which a program that
    compiles nothing itself then paid for us alone."""
    import sys

    cached = getattr(globals().get("__spec__"), "cached", None)
    here = os.path.dirname(os.path.abspath(__file__))
    if not cached or os.path.dirname(os.path.dirname(cached)) != here or os.path.exists(cached):
        return
    try:
        import _imp
        import marshal

        bootstrap = sys.modules["_frozen_importlib_external"]
        with open(__file__, "rb") as f:
            source = f.read()
        code = compile(source, __file__, "exec", dont_inherit=True)
        flags = (1).to_bytes(4, "little")  # hash-based, source not checked
        data = bootstrap.MAGIC_NUMBER + flags + _imp.source_hash(bootstrap._RAW_MAGIC_NUMBER, source)
        try:
            os.mkdir(os.path.dirname(cached), 0o700)
        except FileExistsError:
            pass
        _keep(cached, data + marshal.dumps(code))
    except (OSError, AttributeError, KeyError, ImportError, ValueError):
        pass


_cache_self()
load_own("debug_mcp_site")
