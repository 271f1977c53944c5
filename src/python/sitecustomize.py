"""debug-mcp's, first on the debuggee's PYTHONPATH: runs debug_mcp_site.py. Python compiles this
file anew at each start (PYTHONDONTWRITEBYTECODE stays as it is, which keeps a program's own
folders clean), 2.3 ms for the 5 KB it was (3.11): it only loads the others, compiled once."""

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
            _keep(marshal, code, kept)
    except (TypeError, OSError, EOFError, ValueError, AttributeError):
        with open(path, "rb") as f:
            code = compile(f.read(), path, "exec")
        if kept:
            _keep(marshal, code, kept)
    module = type(sys)(name)
    module.__file__ = path
    sys.modules[name] = module
    try:
        exec(code, module.__dict__)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def _keep(marshal, code, kept):
    try:
        part = "%s.%d" % (kept, os.getpid())
        with open(part, "wb") as f:
            marshal.dump(code, f)
        os.replace(part, kept)
    except OSError:
        pass


def _moved(code, path):
    """`code` and the functions' in it with `path` for their file (3.8+: code.replace), so that
    our frames are known as ours and tracebacks name the file."""
    consts = tuple(_moved(c, path) if type(c) is type(code) else c for c in code.co_consts)
    return code.replace(co_filename=path, co_consts=consts)


load_own("debug_mcp_site")
