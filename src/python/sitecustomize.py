"""debug-mcp's, first on the debuggee's PYTHONPATH: runs debug_mcp_site.py. Python compiles this
file anew at each start (PYTHONDONTWRITEBYTECODE stays as it is, which keeps a program's own
folders clean), 2.3 ms for the 5 KB it was (3.11): it only loads the others, compiled once."""

import os


def load_own(name):
    """Imports debug-mcp's module `name` from this directory, its code compiled once per server
    and Python version and kept here (marshal), where no one else writes."""
    import marshal
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(here, name + ".py")
    tag = sys.implementation.cache_tag
    kept = os.path.join(here, "%s.%s.code" % (name, tag)) if tag else None
    try:
        with open(kept, "rb") as f:
            code = marshal.loads(f.read())  # marshal.load reads in small pieces: 8x slower
    except (TypeError, OSError, EOFError, ValueError):
        with open(path, "rb") as f:
            code = compile(f.read(), path, "exec")
        if kept:
            try:
                part = "%s.%d" % (kept, os.getpid())
                with open(part, "wb") as f:
                    marshal.dump(code, f)
                os.replace(part, kept)
            except OSError:
                pass
    module = type(sys)(name)
    module.__file__ = path
    sys.modules[name] = module
    try:
        exec(code, module.__dict__)
    except BaseException:
        del sys.modules[name]
        raise
    return module


load_own("debug_mcp_site")
