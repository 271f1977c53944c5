#!/usr/bin/env python3
"""Python sessions (issue 30): debug-mcp's own debugger beside debugpy and `python` alone, in one
run.

Usage: python3 bench/pysession.py [--runs N]   (builds the release binary first, unless
DEBUG_MCP_BIN names the binary to measure)

Figures (medians of N; debugpy's only where the interpreter has it):
  - debug-launch to the first stop at fixtures/py/loop.py:5, beside `python loop.py` alone.
    Target: at most 100 ms more than python alone.
  - debug-continue to the next hit and a step over (medians of 3 N). Target: at most 5 ms each.
  - debug-continue from a breakpoint on the program's last line to `exited`. Target: 50 ms.
  - A program that runs ~0.5 s with a breakpoint that is never hit, launch to exited, beside it
    alone, per interpreter (the test venv's, and pyenv's newest 3.12+ when there). Target, on
    3.12+: at most 1.2x.
Nothing here asserts: machines are noisy.
"""

import glob
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import BINARY, PYTHON, ROOT, Server, timed  # noqa: E402

LOOP = os.path.join(ROOT, "fixtures", "py", "loop.py")
# Calls a small function three million times; `unused` never runs.
NEVER = '''\
def unused(x):
    return x * 2


def step(total, i):
    return total + i % 7


total = 0
for i in range(3000000):
    total = step(total, i)
print(total)
'''


def tool(server, name, arguments):
    result = server.request("tools/call", {"name": name, "arguments": arguments})["result"]
    return result["structuredContent"]


def ms(seconds):
    return "%.1f ms" % (seconds * 1000)


def alone(argv, runs):
    return statistics.median(timed(lambda: subprocess.run(argv, capture_output=True))[0] for _ in range(runs))


def has_debugpy(python):
    return subprocess.run([python, "-c", "import debugpy"], capture_output=True).returncode == 0


def session(server, python, language, runs):
    """Launch to the first stop, continue and step medians, last line to exited."""
    extra = {"language": language} if language else {}
    launch, resume, step, ended = [], [], [], []
    for _ in range(runs):
        elapsed, state = timed(lambda: tool(server, "debug-launch", dict(
            command=f"{python} {LOOP}", breakpoints=[{"file": LOOP, "line": 5}], **extra)))
        assert state.get("reason") == "breakpoint", state
        launch.append(elapsed)
        for _ in range(2):
            elapsed, state = timed(lambda: tool(server, "debug-continue", {}))
            assert state.get("reason") == "breakpoint", state
            resume.append(elapsed)
        tool(server, "debug-breakpoint", {"remove": "1"})
        tool(server, "debug-breakpoint", {"file": LOOP, "line": 6})
        elapsed, state = timed(lambda: tool(server, "debug-continue", {"step": "over"}))
        step.append(elapsed)
        state = tool(server, "debug-continue", {})
        assert state.get("reason") == "breakpoint" and state["location"]["line"] == 6, state
        elapsed, state = timed(lambda: tool(server, "debug-continue", {}))
        assert state["state"] == "exited", state
        ended.append(elapsed)
        tool(server, "debug-stop", {})
    return [statistics.median(x) for x in (launch, resume, step, ended)]


def never_hit(server, python, runs, language=None):
    """Launch to exited of NEVER with a breakpoint in `unused`, and NEVER alone."""
    path = os.path.join(ROOT, "target", "bench", "never_hit.py")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(NEVER)
    times = []
    for _ in range(runs):
        arguments = {"command": f"{python} {path}", "breakpoints": [{"file": path, "line": 2}],
                     "timeout": 60000}
        if language:
            arguments["language"] = language
        elapsed, state = timed(lambda: tool(server, "debug-launch", arguments))
        assert state["state"] == "exited", state
        times.append(elapsed)
        tool(server, "debug-stop", {})
    return statistics.median(times), alone([python, path], runs)


def main():
    runs = int(sys.argv[sys.argv.index("--runs") + 1]) if "--runs" in sys.argv else 5
    if "DEBUG_MCP_BIN" not in os.environ:
        subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
    server = Server(BINARY)
    server.initialize()
    python = PYTHON if os.path.exists(PYTHON) else "python3"
    subprocess.run([python, LOOP], capture_output=True)
    by_itself = alone([python, LOOP], runs)
    print("python loop.py alone: %s" % ms(by_itself))
    for label, language in [("debug-mcp's own debugger", None), ("debugpy", "debugpy")]:
        if language and not has_debugpy(python):
            print("%s: not installed for %s" % (label, python))
            continue
        launch, resume, step, ended = session(server, python, language, runs)
        print("%s: debug-launch to the first stop %s (%s more than python alone; target <= 100 ms "
              "more); debug-continue %s, step over %s (target <= 5 ms each); last line to exited %s "
              "(target <= 50 ms)" % (label, ms(launch), ms(launch - by_itself), ms(resume), ms(step),
                                     ms(ended)))
    newer = sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.1[2-9]*/bin/python3")))
    for interpreter in [python] + newer[-1:]:
        version = subprocess.run([interpreter, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                                 capture_output=True, text=True).stdout.strip()
        debugged, by_itself = never_hit(server, interpreter, runs)
        line = ("Python %s, a breakpoint never hit: the program alone %s; launch to exited %s: %.2fx "
                % (version, ms(by_itself), ms(debugged), debugged / by_itself))
        if has_debugpy(interpreter):
            debugged, _ = never_hit(server, interpreter, runs, "debugpy")
            line += "(debugpy: %s, %.2fx) " % (ms(debugged), debugged / by_itself)
        print(line + "(target on 3.12+: <= 1.2x)")
    server.close()


if __name__ == "__main__":
    time.sleep(0)
    main()
