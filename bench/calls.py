#!/usr/bin/env python3
"""Benchmarks for `calls` and hang reports (issue 29), each beside the program alone, in one run.

Usage: python3 bench/calls.py [--runs N]   (builds the release binary first, unless
DEBUG_MCP_BIN names the binary to measure)

Figures (the best of N runs each, `debug-mcp-server run` as an agent's one call):
  - Python: fixtures/calls/work.py makes 10,000 traced calls (5,000 order lines, two functions
    each); alone, then under `--calls` with every call recorded (`--max-hits 10000`) and with
    the default cap (200 recorded, the rest counted), and the fixed cost of any debug-script
    run (`--calls` naming no function); per interpreter (target/venv's, and a 3.12+ when
    pyenv has one). Each also through one server, as an agent calls it (`tools/call` after a
    first call: the server keeps the tracer compiled), that again turn about with the program
    alone, 4N times each (the machine's noise then falls on both), and the same with the
    functions in a module the program imports (`import work`). Target: at most 1.5x the
    program alone.
  - Node: fixtures/calls/work.js makes 1,500 traced calls (500 lines: the callback, and two
    functions); alone and with every call recorded. Target: 1,000 calls in at most 1 s.
  - A hang report: a program that sleeps, run with `--timeout 1000`; the time past the
    timeout; and an idle Node program with two pending awaits (`--timeout 3000`, found by a heap
    snapshot taken ahead). Target: at most 300 ms.
Nothing here asserts: CI machines are noisy.
"""

import glob
import json
import os
import shlex
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BINARY = os.environ.get("DEBUG_MCP_BIN", os.path.join(ROOT, "target", "release", "debug-mcp-server"))
PYTHON = os.environ.get("DEBUG_MCP_TEST_PYTHON", os.path.join(ROOT, "target", "venv", "bin", "python"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import Server  # noqa: E402

WORK_PY = os.path.join(ROOT, "fixtures", "calls", "work.py")
WORK_JS = os.path.join(ROOT, "fixtures", "calls", "work.js")


def best(command, runs):
    """The least wall time of `runs` runs (ms), and the last run's stdout."""
    times = []
    out = b""
    for _ in range(runs):
        start = time.perf_counter()
        out = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=ROOT).stdout
        times.append((time.perf_counter() - start) * 1000)
    return min(times), out


def calls_of(out):
    try:
        answer = json.loads(out)
    except ValueError:
        return "no answer"
    return "%d calls, %d more counted, %d bytes" % (
        len(answer.get("calls", [])), sum(answer.get("callsOmitted", {}).values()), len(out))


def served(server, arguments, runs):
    """The least wall time of `runs` debug-script calls on one server (ms), after one more."""
    times = []
    for _ in range(runs + 1):
        start = time.perf_counter()
        answer = server.request("tools/call", {"name": "debug-script", "arguments": arguments})
        times.append((time.perf_counter() - start) * 1000)
    return min(times[1:]), answer.get("result", {}).get("structuredContent", {})


def interleaved(server, words, arguments, runs):
    """The program alone and the same through the server's debug-script, turn about, `runs`
    times each (the machine's noise then falls on both): ((least, median) alone, (least,
    median) traced), in ms."""
    server.request("tools/call", {"name": "debug-script", "arguments": arguments})
    alone, traced = [], []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(words, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
        alone.append((time.perf_counter() - start) * 1000)
        start = time.perf_counter()
        server.request("tools/call", {"name": "debug-script", "arguments": arguments})
        traced.append((time.perf_counter() - start) * 1000)
    both = [sorted(alone), sorted(traced)]
    return [(t[0], t[len(t) // 2]) for t in both]


def pythons():
    found = [PYTHON if os.path.exists(PYTHON) else "python3"]
    newer = sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.1[2-9]*/bin/python3")))
    return found + newer[-1:]


def main():
    runs = int(sys.argv[sys.argv.index("--runs") + 1]) if "--runs" in sys.argv else 3
    if "DEBUG_MCP_BIN" not in os.environ:
        subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
    run = [BINARY, "run"]
    for python in pythons():
        version = subprocess.run([python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                                 stdout=subprocess.PIPE, text=True).stdout.strip()
        alone, _ = best([python, WORK_PY], runs)
        fixed, _ = best(run + ["--calls", WORK_PY + ":nothing", "--", python, WORK_PY], runs)
        every, out = best(run + ["--calls", WORK_PY, "--max-hits", "10000", "--", python, WORK_PY], runs)
        capped, capped_out = best(run + ["--calls", WORK_PY, "--", python, WORK_PY], runs)
        print("Python %s, 10,000 traced calls: alone %.0f ms; every call recorded %.0f ms (%.2fx; %s);"
              " default cap %.0f ms (%.2fx; %s); any run's fixed cost %.0f ms; per recorded call %.1f us"
              "  [target <= 1.5x]" % (version, alone, every, every / alone, calls_of(out), capped,
                                     capped / alone, calls_of(capped_out), fixed,
                                     (every - fixed) * 1000 / 10000))
        server = Server(BINARY)
        server.initialize()
        command = "%s %s" % (python, WORK_PY)
        fixed, _ = served(server, {"command": command, "calls": [{"file": WORK_PY, "function": "nothing"}]}, runs)
        capped, answer = served(server, {"command": command, "calls": [{"file": WORK_PY}]}, runs)
        print("  through one server: default cap %.0f ms (%.2fx; %d calls, %d more counted); any run's fixed"
              " cost %.0f ms  [target <= 1.5x]" % (capped, capped / alone, len(answer.get("calls", [])),
                                                  sum(answer.get("callsOmitted", {}).values()), fixed))
        (least, median), (traced_least, traced_median) = interleaved(
            server, [python, WORK_PY], {"command": command, "calls": [{"file": WORK_PY}]}, 4 * runs)
        print("  the same, turn about with the program alone %d times: least %.0f vs %.0f ms (%.2fx),"
              " median %.0f vs %.0f ms (%.2fx)  [target <= 1.5x]"
              % (4 * runs, traced_least, least, traced_least / least, traced_median, median,
                 traced_median / median))
        # The same functions in a module the program imports (a library's, during its tests):
        # before 3.12 compiled with the calls in, not traced.
        imports = [python, "-c", "import sys; sys.path.insert(0, %r); import work" % os.path.dirname(WORK_PY)]
        alone, _ = best(imports, runs)
        command = " ".join(shlex.quote(part) for part in imports)
        capped, answer = served(server, {"command": command, "calls": [{"file": WORK_PY}]}, runs)
        server.close()
        print("  imported (`import work`), through one server: alone %.0f ms; default cap %.0f ms (%.2fx; %d"
              " calls, %d more counted)  [target <= 1.5x]" % (alone, capped, capped / alone,
                                                          len(answer.get("calls", [])),
                                                          sum(answer.get("callsOmitted", {}).values())))
    alone, _ = best(["node", WORK_JS], runs)
    every, out = best(run + ["--calls", WORK_JS, "--max-hits", "1500", "--", "node", WORK_JS], runs)
    capped, capped_out = best(run + ["--calls", WORK_JS, "--", "node", WORK_JS], runs)
    print("Node, 1,500 traced calls: alone %.0f ms; every call recorded %.0f ms (%s); per call %.2f ms;"
          " 1,000 calls %.0f ms; default cap %.0f ms (%s)  [target <= 1000 ms]"
          % (alone, every, calls_of(out), (every - alone) / 1500, (every - alone) / 1.5, capped,
             calls_of(capped_out)))
    sleeper = [PYTHON if os.path.exists(PYTHON) else "python3", "-c", "import time; time.sleep(60)"]
    report, out = best(run + ["--timeout", "1000", "--"] + sleeper, runs)
    node_report, _ = best(run + ["--timeout", "1000", "--", "node", "-e", "setInterval(() => {}, 1000)"], runs)
    print("Hang report past a 1,000 ms timeout: Python %.0f ms, Node %.0f ms  [target <= 300 ms]"
          % (report - 1000, node_report - 1000))
    # An idle Node process with two async functions waiting: their awaits come from a heap
    # snapshot taken a second before the timeout; the report itself re-reads them.
    awaits, out = best(run + ["--timeout", "3000", "--", "node", os.path.join(ROOT, "fixtures", "hangs", "awaits.js")], runs)
    found = len(json.loads(out)["hang"]["threads"][0].get("awaiting", [])) if out else 0
    print("Hang report past a 3,000 ms timeout, Node idle with %d pending awaits: %.0f ms  [target <= 300 ms]"
          % (found, awaits - 3000))
    # Compiled programs, where their debuggers are installed: C's deadlock under lldb-dap, and
    # a Go program of three goroutines under Delve (each timeout counts the adapter's start).
    scratch = os.path.join(ROOT, "target", "bench-hangs")
    os.makedirs(scratch, exist_ok=True)
    rows = []
    deadlock = os.path.join(scratch, "deadlock")
    built = subprocess.run(["gcc", "-g", "-O0", "-o", deadlock, os.path.join(ROOT, "fixtures", "hangs", "deadlock.c")],
                           stderr=subprocess.DEVNULL).returncode == 0
    if built and (shutil.which("lldb-dap") or shutil.which("lldb-dap-19")):
        c_report, _ = best(run + ["--timeout", "3000", "--", deadlock], runs)
        rows.append("C (lldb-dap) %.0f ms" % (c_report - 3000))
    gohang = os.path.join(scratch, "gohang")
    if shutil.which("dlv") and subprocess.run(["go", "build", "-o", gohang, "."], cwd=os.path.join(ROOT, "fixtures", "hangs", "go"),
                                              stderr=subprocess.DEVNULL).returncode == 0:
        go_report, _ = best(run + ["--timeout", "3000", "--", gohang], runs)
        rows.append("Go (Delve) %.0f ms" % (go_report - 3000))
    if rows:
        print("Hang report past a 3,000 ms timeout: %s  [target <= 300 ms]" % ", ".join(rows))


if __name__ == "__main__":
    main()
