"""debug-mcp's way into a Python program run with -I, -E or -S, which skip the sitecustomize.py
on our PYTHONPATH: `python -I debug_mcp_run.py script.py args` (or `... -m module args`)
starts the line probes (or debug-mcp's debugger, in a session), then runs the program as `python` would have (its `sys.argv`, its
`sys.path[0]`, as `__main__`)."""

import os
import sys

helpers = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, helpers)
if "DEBUG_MCP_DAP" in os.environ:
    import debug_mcp_session  # noqa: E402

    debug_mcp_session.start()
else:
    import debug_mcp_trace  # noqa: E402

    debug_mcp_trace.start()
sys.path.remove(helpers)
# The helpers' directory was sys.path[0]; the program's own is its script's, unless the
# interpreter prepends none (-I, -P).
prepends = not (sys.flags.isolated or getattr(sys.flags, "safe_path", False))
if sys.path and sys.path[0] == helpers:
    sys.path.pop(0)
del sys.argv[0]
import runpy  # noqa: E402

if sys.argv[0] == "-m":
    del sys.argv[0]
    if prepends:
        sys.path.insert(0, os.getcwd())
    runpy._run_module_as_main(sys.argv[0])
else:
    if prepends:
        sys.path.insert(0, os.path.dirname(os.path.abspath(sys.argv[0])))
    runpy.run_path(sys.argv[0], run_name="__main__")
