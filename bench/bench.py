#!/usr/bin/env python3
"""Benchmarks for debug-mcp: prints every figure issue 2 asks for, side by side, in one run.

Usage: python3 bench/bench.py [--runs N]   (builds the release binary first)

Figures:
  - median wall time of a debug-script call on a 3-hit fixture (through the MCP server),
    against `node fixture.js` alone with its output piped (as any tool that captures output
    runs it) and written to /dev/null, and against a bare CDP client doing the least any
    debugger must (enable, one breakpoint, run): the floor; and the same done by the process
    itself (inspector.Session), which leaves V8's own cost of Debugger.enable;
  - wall time of a 10,000-hit debug-script call;
  - time from spawning the server to its tools/list answer (initialize and tools/list are
    written at once, as clients do);
  - the bytes of tools/list that clients put before the model (each tool's name,
    description and inputSchema), and of initialize's instructions;
  - peak RSS of the server process (VmHWM, after all the calls above);
  - size of the stripped release binary, and the number of crates in `cargo tree`;
  - the static build's size (`bash .ci/dist` makes it) and its speed against the release
    build's: the 3-hit and 10,000-hit calls, debug-continue, start-up;
  - session latency: median `debug-continue` to the next breakpoint hit and median
    `debug-step`, against the same cycles driven by a bare CDP client (stdlib Python, no
    debug-mcp) and a bare `Runtime.evaluate` round trip, all in the same run;
  - Python (when target/venv or DEBUG_MCP_TEST_PYTHON has it, and again with a Python 3.12+
    found beside it): debug-script's 3-hit and 2,000-hit calls and a pytest run with a probe,
    each against the same run alone; through debug-mcp's own debugger, a session's median `debug-continue` and
    `debug-step`, debug-launch to the first stop and the last line to `exited`;
  - a breakpoint through a large source map: a generated 5 MB bundle with a ~20 MB map
    (target/bench/), the same call with the breakpoint set in the bundle itself, and the
    difference (finding, reading, decoding, indexing and looking up the map).
Targets are printed next to each figure; nothing here asserts, CI machines are noisy.
"""

import base64
import json
import os
import socket
import statistics
import struct
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The binary measured: DEBUG_MCP_BIN (CI gives the static build, the one the packages ship),
# else the release build, built first (`build()`).
BINARY = os.environ.get("DEBUG_MCP_BIN", os.path.join(ROOT, "target", "release", "debug-mcp-server"))


def build():
    """Builds the release binary unless DEBUG_MCP_BIN names the one to measure."""
    if "DEBUG_MCP_BIN" not in os.environ:
        subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
# The static build (.ci/dist): opt-level "z", panic = "abort", glibc linked in.
DIST = os.path.join(ROOT, "target", "x86_64-unknown-linux-gnu", "static", "debug-mcp-server")
FIXTURE = os.path.join(ROOT, "fixtures", "loop.js")
COUNT = os.path.join(ROOT, "fixtures", "count.js")
COUNT_PY = os.path.join(ROOT, "fixtures", "py", "count.py")
# An interpreter with debugpy: .ci/run's venv, or DEBUG_MCP_TEST_PYTHON.
PYTHON = os.environ.get("DEBUG_MCP_TEST_PYTHON", os.path.join(ROOT, "target", "venv", "bin", "python"))
EXTRA_ENV = {}


class Server:
    """The release binary spoken to over stdio; every read has a deadline."""

    def __init__(self, binary=None, env=None):
        self.proc = subprocess.Popen([binary or BINARY], cwd=ROOT, env=dict(env or os.environ, **EXTRA_ENV),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.next_id = 1

    def send(self, message):
        self.proc.stdin.write((json.dumps(message) + "\n").encode())
        self.proc.stdin.flush()

    def request(self, method, params):
        rid = self.next_id
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise SystemExit("server closed stdout")
            message = json.loads(line)
            if message.get("id") == rid:
                self.last_bytes = len(line)
                return message

    def initialize(self):
        self.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                    "clientInfo": {"name": "bench", "version": "0"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def peak_rss_kib(self):
        with open(f"/proc/{self.proc.pid}/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
        return 0

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=10)


def tools_list_bytes():
    """What clients put before the model in every turn: each tool's name, description and
    inputSchema (compact JSON), all tools together; the whole tools/list answer; and the
    `instructions` of initialize."""
    server = Server()
    init = server.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                         "clientInfo": {"name": "bench", "version": "0"}})
    tools = server.request("tools/list", {})["result"]["tools"]
    server.close()
    compact = lambda value: len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())
    facing = sum(compact({k: t[k] for k in ("name", "description", "inputSchema")}) for t in tools)
    instructions = len(init["result"]["instructions"].encode())
    return len(tools), facing, compact({"tools": tools}), instructions


def timed(f):
    start = time.perf_counter()
    result = f()
    return time.perf_counter() - start, result


def debug_script(server, command, file, line, expression):
    response = server.request("tools/call", {"name": "debug-script", "arguments": {
        "command": command, "breakpoint": {"file": file, "line": line}, "expression": expression}})
    result = response["result"]
    if result.get("isError"):
        raise SystemExit(f"debug-script failed: {result['structuredContent']}")
    return result["structuredContent"]


def follow_overhead(server, runs=5):
    """Following children: `node --test` with 3 files, and jest with 2 workers, alone and under
    debug-script (every process followed), median of `runs` each. None without fixtures'
    node_modules (`npm install --prefix fixtures`)."""
    jest = os.path.join(ROOT, "fixtures/node_modules/.bin/jest")
    if not os.path.exists(jest):
        return None
    runners = os.path.join(ROOT, "fixtures/runners")
    cases = [
        ("node --test, 3 test files", ["node", "--test", os.path.join(ROOT, "fixtures/node-test")], ROOT,
         os.path.join(ROOT, "fixtures/node-test/square.js"), 4, "n", 3),
        ("jest, 2 workers, 2 test files", [jest, "--maxWorkers=2", "--no-cache", "sum.test.js", "sum2.test.js"],
         runners, os.path.join(runners, "sum.js"), 5, "total", 5),
    ]
    rows = []
    for name, argv, cwd, file, line, expression, hits in cases:
        alone, followed = [], []
        for _ in range(runs):
            alone.append(timed(lambda: subprocess.run(argv, cwd=cwd, capture_output=True, check=True))[0])
            arguments = {"command": " ".join(argv), "cwd": cwd, "breakpoint": {"file": file, "line": line},
                         "expression": expression, "timeout": 60000}
            elapsed, response = timed(lambda: server.request("tools/call", {"name": "debug-script", "arguments": arguments}))
            result = response["result"]["structuredContent"]
            assert len(result.get("results", [])) == hits, result
            followed.append(elapsed)
        rows.append((name, statistics.median(alone), statistics.median(followed)))
    return rows


def spawn_to_tools_list(binary=None):
    proc = subprocess.Popen([binary or BINARY], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    start = time.perf_counter()
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "b", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]
    proc.stdin.write("".join(json.dumps(m) + "\n" for m in lines).encode())
    proc.stdin.flush()
    while True:
        message = json.loads(proc.stdout.readline())
        if message.get("id") == 2:
            break
    elapsed = time.perf_counter() - start
    proc.stdin.close()
    proc.wait(timeout=10)
    return elapsed


class RawCdp:
    """A bare Chrome DevTools Protocol client: stdlib sockets, a minimal WebSocket, with
    TCP_NODELAY and TCP_QUICKACK (as debug-mcp's own client), for baseline round trips."""

    def __init__(self, url):
        host_port, path = url[len("ws://"):].split("/", 1)
        host, port = host_port.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET /{path} HTTP/1.1\r\nHost: {host_port}\r\nUpgrade: websocket\r\n"
                           f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                           "Sec-WebSocket-Version: 13\r\n\r\n").encode())
        response = b""
        while b"\r\n\r\n" not in response:
            response += self.sock.recv(1)
        self.next_id = 1
        self.buffer = b""

    def _read(self, n):
        while len(self.buffer) < n:
            chunk = self.sock.recv(65536)
            if hasattr(socket, "TCP_QUICKACK"):
                self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK, 1)
            if not chunk:
                raise SystemExit("inspector closed")
            self.buffer += chunk
        data, self.buffer = self.buffer[:n], self.buffer[n:]
        return data

    def send(self, method, params=None):
        payload = json.dumps({"id": self.next_id, "method": method, "params": params or {}}).encode()
        self.next_id += 1
        header = bytes([0x81])
        if len(payload) < 126:
            header += bytes([0x80 | len(payload)])
        elif len(payload) < 65536:
            header += bytes([0x80 | 126]) + struct.pack(">H", len(payload))
        else:
            header += bytes([0x80 | 127]) + struct.pack(">Q", len(payload))
        mask = os.urandom(4)
        self.sock.sendall(header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))
        return self.next_id - 1

    def recv(self):
        first, second = self._read(2)
        length = second & 0x7F
        if length == 126:
            length = struct.unpack(">H", self._read(2))[0]
        elif length == 127:
            length = struct.unpack(">Q", self._read(8))[0]
        return json.loads(self._read(length))

    def until(self, predicate):
        while True:
            message = self.recv()
            if predicate(message):
                return message

    def call(self, method, params=None):
        rid = self.send(method, params)
        return self.until(lambda m: m.get("id") == rid)


def bare_script():
    """The floor of the 3-hit figure for any CDP client: node under --inspect-wait, a bare
    client that enables the debugger, sets one (never-true) conditional breakpoint and lets it
    run to its end. Seconds, one run."""
    start = time.perf_counter()
    proc = subprocess.Popen(["node", "--inspect-wait=0", FIXTURE], stderr=subprocess.PIPE,
                            stdout=subprocess.PIPE)
    try:
        url = proc.stderr.readline().decode().split("listening on ")[1].strip()
        cdp = RawCdp(url)
        cdp.send("Debugger.enable")
        cdp.send("Debugger.setBreakpointByUrl", {"urlRegex": ".*loop\\.js$", "lineNumber": 4,
                                                 "condition": "false"})
        cdp.send("NodeRuntime.notifyWhenWaitingForDisconnect", {"enabled": True})
        cdp.send("Runtime.runIfWaitingForDebugger")
        # Node can read the request just before it enters its wait, and then waits for ever
        # (docs/performance.md): sent again until the program shows it runs, as debug-mcp does.
        cdp.sock.settimeout(0.5)
        deadline = time.perf_counter() + 30
        while True:
            try:
                if cdp.recv().get("method") == "NodeRuntime.waitingForDisconnect":
                    break
            except socket.timeout:
                if time.perf_counter() > deadline:
                    raise SystemExit("bare CDP client: the fixture did not end within 30 s")
                cdp.send("Runtime.runIfWaitingForDebugger")
        cdp.sock.close()
        proc.communicate(timeout=30)
    finally:
        proc.kill()
        proc.wait()
    return time.perf_counter() - start


# The same floor with no client and no inspector port: the process enables its own debugger
# (`inspector.Session`, same thread) and sets the breakpoint before its main script runs. What
# is left over node alone is V8's: Debugger.enable reports every script loaded so far with a
# SHA-256 of its source, and every script compiled after it.
IN_PROCESS = """const inspector = require('inspector');
const session = new inspector.Session();
session.connect();
session.post('Debugger.enable');
session.post('Debugger.setBreakpointByUrl', {urlRegex: '.*loop\\\\.js$', lineNumber: 4, condition: 'false'});
"""


def in_process_preload():
    """Writes the in-process floor's preload (afresh: an older one may differ) and returns its path."""
    preload = os.path.join(ROOT, "target", "bench", "in-process-floor.js")
    os.makedirs(os.path.dirname(preload), exist_ok=True)
    with open(preload, "w") as f:
        f.write(IN_PROCESS)
    return preload


def in_process_script(preload):
    """Seconds of one run of the fixture with the in-process floor `preload`ed."""
    return timed(lambda: subprocess.run(["node", "--require", preload, FIXTURE], capture_output=True, check=True))[0]


def raw_cycles(runs):
    """Resume-to-next-hit, step and evaluate round trips with a bare CDP client."""
    proc = subprocess.Popen(["node", "--inspect-brk=0", COUNT, "100000000"], stderr=subprocess.PIPE,
                            stdout=subprocess.DEVNULL)
    try:
        url = proc.stderr.readline().decode().split("listening on ")[1].strip()
        cdp = RawCdp(url)
        cdp.call("Debugger.enable")
        cdp.call("Debugger.setBreakpointByUrl", {"urlRegex": ".*count\\.js$", "lineNumber": 5})
        cdp.call("Runtime.runIfWaitingForDebugger")
        paused = lambda m: m.get("method") == "Debugger.paused"
        cdp.until(paused)  # break on start
        cdp.send("Debugger.resume")
        cdp.until(paused)  # first hit
        resume, step, evaluate = [], [], []
        for _ in range(runs):
            elapsed, _ = timed(lambda: (cdp.send("Debugger.resume"), cdp.until(paused)))
            resume.append(elapsed)
            elapsed, _ = timed(lambda: (cdp.send("Debugger.stepOver"), cdp.until(paused)))
            step.append(elapsed)
            elapsed, _ = timed(lambda: cdp.call("Runtime.evaluate", {"expression": "1"}))
            evaluate.append(elapsed)
        return statistics.median(resume), statistics.median(step), statistics.median(evaluate)
    finally:
        proc.kill()
        proc.wait()


def session_cycles(server, runs, command, file, line, attach_port=None):
    """The same cycles through debug-mcp's session tools (Node, or Python: its own debugger,
    or debugpy when attached),
    launched, or attached on `attach_port` to a program `command` started."""
    def tool(name, arguments):
        result = server.request("tools/call", {"name": name, "arguments": arguments})["result"]
        if result.get("isError"):
            raise SystemExit(f"{name} failed: {result['structuredContent']}")
        return result["structuredContent"]
    breakpoints = [{"file": file, "line": line}]
    if attach_port is None:
        state = tool("debug-launch", {"command": command, "breakpoints": breakpoints})
    else:
        # Until debugpy listens. (Probing the port with a bare connection could upset it.)
        deadline = time.monotonic() + 30
        arguments = {"port": attach_port, "language": "python", "breakpoints": breakpoints}
        while True:
            result = server.request("tools/call", {"name": "debug-attach", "arguments": arguments})["result"]
            if result["structuredContent"].get("code") != "no_inspector" or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        state = result["structuredContent"]
    assert state["state"] == "paused", state
    resume, step = [], []
    for _ in range(runs):
        elapsed, state = timed(lambda: tool("debug-continue", {}))
        assert state["reason"] == "breakpoint", state
        resume.append(elapsed)
        elapsed, state = timed(lambda: tool("debug-step", {"kind": "over"}))
        assert state["reason"] == "step", state
        step.append(elapsed)
    tool("debug-stop", {})
    return statistics.median(resume), statistics.median(step)


def python_attached_cycles(server, runs):
    """Session cycles attached to `python -m debugpy --listen PORT --wait-for-client`."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    program = subprocess.Popen([PYTHON, "-m", "debugpy", "--listen", f"127.0.0.1:{port}", "--wait-for-client",
                                COUNT_PY, "100000000"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        return session_cycles(server, runs, None, COUNT_PY, 7, attach_port=port)
    finally:
        program.kill()
        program.wait()


def other_pythons():
    """Interpreters beside PYTHON measured too: the newest with sys.monitoring (3.12+) found on
    PATH or under pyenv, when PYTHON has none."""
    import glob
    import shutil

    version = lambda p: subprocess.run([p, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                                       capture_output=True, text=True).stdout.strip()
    for name in ("3.13", "3.12"):
        # pyenv's shim on PATH may name a version it does not select: its own folder first.
        for path in sorted(glob.glob(os.path.expanduser(f"~/.pyenv/versions/{name}*/bin/python3")))[-1:] + \
                [shutil.which(f"python{name}")]:
            if path and version(path) == name:
                return [(name, path)]
    return []


def python_rows(runs):
    """Python's one-shot questions (line probes, no debugger) against the same run alone, and a
    session's start and end through debug-mcp's own debugger."""
    if not os.path.exists(PYTHON):
        return [("Python", "no target/venv", "python3 -m venv target/venv; pip install debugpy pytest")]
    ms = lambda s: f"{s * 1000:.1f} ms"
    loop = os.path.join(ROOT, "fixtures", "py", "loop.py")
    suite = os.path.join(ROOT, "fixtures", "py", "suite")
    calc = os.path.join(suite, "calc.py")
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as a user runs it: .pyc files read and written
    rows = []
    server = Server(env=env)
    server.initialize()
    for version, python in [("", PYTHON)] + other_pythons():
        label = f"Python {version or 'target/venv'}"
        alone_runs = lambda argv: statistics.median(
            timed(lambda: subprocess.run(argv, capture_output=True, env=env, check=False))[0] for _ in range(runs))
        subprocess.run([python, loop], capture_output=True, env=env)
        debug_script(server, f"{python} {loop}", loop, 5, "total")
        alone = alone_runs([python, loop])
        traced = statistics.median(timed(lambda: debug_script(server, f"{python} {loop}", loop, 5, "total"))[0]
                                   for _ in range(runs))
        rows.append((f"{label}: debug-script, 3 hits (median of {runs})", ms(traced),
                     f"python alone {ms(alone)}: {traced / alone:.2f}x, +{ms(traced - alone)} "
                     "(target <= 3x or +20 ms)"))
        hits, result = timed(lambda: debug_script(server, f"{python} {COUNT_PY} 2000", COUNT_PY, 7, "i"))
        assert len(result["results"]) == 2000, result
        alone = alone_runs([python, COUNT_PY, "2000"])
        rows.append((f"{label}: debug-script, 2,000 hits", ms(hits),
                     f"python alone {ms(alone)} (target <= 300 ms)"))
        has_pytest = subprocess.run([python, "-c", "import pytest"], capture_output=True).returncode == 0
        if has_pytest:
            pytest = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", suite]
            alone = alone_runs(pytest)
            traced = statistics.median(
                timed(lambda: debug_script(server, " ".join(pytest), calc, 5, "result"))[0] for _ in range(runs))
            rows.append((f"{label}: pytest under debug-script (median of {runs})", ms(traced),
                         f"pytest alone {ms(alone)}: {traced / alone:.2f}x (target <= 1.5x)"))
    launch, ended = python_session_ends(server, runs)
    rows.append(("Python session: debug-launch to the first stop (debug-mcp's own debugger)", ms(launch), ""))
    rows.append(("Python session: debug-continue from the last line to exited", ms(ended), ""))
    server.close()
    return rows


def python_session_ends(server, runs):
    """Median debug-launch to the first stop, and debug-continue from the program's last line
    to the answer that it exited."""
    loop = os.path.join(ROOT, "fixtures", "py", "loop.py")
    launch, ended = [], []
    for _ in range(max(3, runs // 3)):
        elapsed, result = timed(lambda: server.request("tools/call", {"name": "debug-launch", "arguments": {
            "command": f"{PYTHON} {loop}", "breakpoints": [{"file": loop, "line": 6}]}}))
        state = result["result"]["structuredContent"]
        assert state["state"] == "paused", result
        launch.append(elapsed)
        session = {"sessionId": state["sessionId"]}
        elapsed, result = timed(lambda: server.request("tools/call", {"name": "debug-continue", "arguments": session}))
        assert result["result"]["structuredContent"]["state"] == "exited", result
        ended.append(elapsed)
        server.request("tools/call", {"name": "debug-stop", "arguments": session})
    return statistics.median(launch), statistics.median(ended)


def big_bundle():
    """Writes target/bench/bundle.js (~5 MB, 200 modules) and its ~20 MB map; returns the
    bundle path, an original file with a line in it, and the generated line it maps to."""
    out = os.path.join(ROOT, "target", "bench")
    os.makedirs(os.path.join(out, "src"), exist_ok=True)
    vlq_chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

    def vlq(n):
        n = (-n << 1) | 1 if n < 0 else n << 1
        text = ""
        while True:
            digit = n & 31
            n >>= 5
            text += vlq_chars[digit | (32 if n else 0)]
            if not n:
                return text

    modules, lines_per_module, statements = 200, 250, 20
    js, mappings, sources, contents = [], [], [], []
    prev = [0, 0, 0]  # source, original line, original column
    for m in range(modules):
        sources.append(f"src/m{m}.ts")
        original = []
        for l in range(lines_per_module):
            js.append("x+=1;" * statements)
            original.append("x+=1 as number;" * statements)
            segments, col = [], 0
            for s_ in range(statements):
                for half in (0, 2):  # two segments per statement
                    gen_col = s_ * 5 + half
                    orig_col = s_ * 15 + half * 5
                    seg = vlq(gen_col - col) + vlq(m - prev[0]) + vlq(l - prev[1]) + vlq(orig_col - prev[2])
                    col, prev = gen_col, [m, l, orig_col]
                    segments.append(seg)
            mappings.append(",".join(segments))
        contents.append("\n".join(original))
    bundle = os.path.join(out, "bundle.js")
    with open(bundle, "w") as f:
        f.write("let x = 0;\n" + "\n".join(js) + "\nconsole.log(x);\n//# sourceMappingURL=bundle.js.map\n")
    with open(bundle + ".map", "w") as f:
        json.dump({"version": 3, "file": "bundle.js", "sources": sources, "sourcesContent": contents,
                   "names": [], "mappings": ";" + ";".join(mappings)}, f)
    for m in (150,):
        with open(os.path.join(out, "src", f"m{m}.ts"), "w") as f:
            f.write(contents[m] + "\n")
    # Original src/m150.ts line 100 (1-based) is generated line 1 + 150*250 + 99 + 1.
    return bundle, os.path.join(out, "src", "m150.ts"), 100, 1 + 150 * lines_per_module + 100


DEPS = os.path.join(ROOT, "target", "bench-deps")


def stop_state_sizes(server):
    """Bytes of the stop state (structuredContent) at a breakpoint inside two real libraries:
    express's router (a request handled) and semver's Range.test. None when npm cannot install
    them."""
    if not os.path.exists(os.path.join(DEPS, "node_modules", "express")):
        installed = subprocess.run(["npm", "install", "--prefix", DEPS, "express@4", "semver@7",
                                    "--no-audit", "--no-fund", "--loglevel=error"], capture_output=True)
        if installed.returncode != 0:
            return None
    app = os.path.join(DEPS, "express-app.js")
    with open(app, "w") as f:
        f.write("const express = require('express');\n"
                "const app = express();\n"
                "app.get('/orders/:id', (req, res) => res.json({ id: req.params.id }));\n"
                "const server = app.listen(0, '127.0.0.1', () => {\n"
                "  require('http').get(`http://127.0.0.1:${server.address().port}/orders/7`, (r) => {\n"
                "    r.resume(); r.on('end', () => server.close());\n"
                "  });\n"
                "});\n")
    versions = os.path.join(DEPS, "semver-app.js")
    with open(versions, "w") as f:
        f.write("const semver = require('semver');\n"
                "console.log(semver.satisfies('1.5.0', '^1.2.3 || >=2.0.0 <3'));\n")

    def line_of(file, text, offset):
        with open(file) as f:
            for number, line in enumerate(f, 1):
                if text in line:
                    return number + offset
        raise SystemExit(f"{text!r} not in {file}")

    router = os.path.join(DEPS, "node_modules", "express", "lib", "router", "index.js")
    range_js = os.path.join(DEPS, "node_modules", "semver", "classes", "range.js")
    sizes = []
    for command, file, line in [
        (f"node {app}", router, line_of(router, "proto.handle = function handle(req, res, out)", 1)),
        (f"node {versions}", range_js, line_of(range_js, "  test (version) {", 1)),
    ]:
        response = server.request("tools/call", {"name": "debug-launch", "arguments": {
            "command": command, "breakpoints": [{"file": file, "line": line}]}})
        state = response["result"]["structuredContent"]
        assert state.get("state") == "paused", state
        sizes.append(len(json.dumps(state, ensure_ascii=False).encode()))
        server.request("tools/call", {"name": "debug-stop", "arguments": {}})
    return sizes


def main():
    runs = 15
    if "--runs" in sys.argv:
        runs = int(sys.argv[sys.argv.index("--runs") + 1])
    build()

    node_piped = []
    node_devnull = []
    script = []
    bare, in_process = [], []
    preload = in_process_preload()
    server = Server()
    server.initialize()
    # One warm-up of each, so the page cache holds node and the fixture.
    subprocess.run(["node", FIXTURE], capture_output=True, check=True)
    debug_script(server, f"node {FIXTURE}", FIXTURE, 5, "total")
    for _ in range(runs):
        node_piped.append(timed(lambda: subprocess.run(["node", FIXTURE], capture_output=True, check=True))[0])
        with open(os.devnull, "w") as devnull:
            node_devnull.append(timed(lambda: subprocess.run(["node", FIXTURE], stdout=devnull, stderr=devnull, check=True))[0])
        elapsed, result = timed(lambda: debug_script(server, f"node {FIXTURE}", FIXTURE, 5, "total"))
        assert len(result["results"]) == 3, result
        script.append(elapsed)
        bare.append(bare_script())
        in_process.append(in_process_script(preload))
    bare = statistics.median(bare)
    in_process = statistics.median(in_process)
    hits_time, hits = timed(lambda: debug_script(server, f"node {COUNT} 10000", COUNT, 6, "i"))
    assert len(hits["results"]) == 10000
    rss = server.peak_rss_kib()
    session_resume, session_step = session_cycles(server, 30, f"node {COUNT} 100000000", COUNT, 6)
    python_resume = python_step = None
    if os.path.exists(PYTHON):
        python_resume, python_step = session_cycles(server, 30, f"{PYTHON} {COUNT_PY} 100000000", COUNT_PY, 7)
    attached_resume = attached_step = None
    if os.path.exists(PYTHON):
        attached_resume, attached_step = python_attached_cycles(server, 30)
    raw_resume, raw_step, raw_evaluate = raw_cycles(30)
    stop_sizes = stop_state_sizes(server)

    follow = follow_overhead(server)

    bundle, original, line, generated_line = big_bundle()
    bundle_mb = os.path.getsize(bundle) / 1e6
    map_mb = os.path.getsize(bundle + ".map") / 1e6
    mapped, plain = [], []
    for _ in range(3):
        elapsed, result = timed(lambda: debug_script(server, f"node {bundle}", original, line, "x"))
        assert result["breakpoint"]["resolvedLine"] == line, result["breakpoint"]
        assert result["breakpoint"]["generated"][0]["line"] == generated_line, result["breakpoint"]
        mapped.append(elapsed)
        elapsed, result = timed(lambda: debug_script(server, f"node {bundle}", bundle, generated_line, "x"))
        assert result["results"][0]["value"] == (150 * 250 + 99) * 20, result["results"]
        plain.append(elapsed)
    rss_big = server.peak_rss_kib()
    server.close()

    startup = statistics.median(spawn_to_tools_list() for _ in range(30))
    tool_count, facing, whole, instructions = tools_list_bytes()
    size = os.path.getsize(BINARY)
    tree = subprocess.run(["cargo", "tree", "--prefix", "none", "--edges", "normal,build"], cwd=ROOT,
                          capture_output=True, text=True, check=True).stdout
    crates = len({line.split(" (")[0].strip() for line in tree.splitlines() if line.strip()})

    ms = lambda s: f"{s * 1000:.1f} ms"
    med_script = statistics.median(script)
    med_piped = statistics.median(node_piped)
    med_null = statistics.median(node_devnull)
    rows = [
        ("debug-script, 3 hits (median of %d)" % runs, ms(med_script), ""),
        ("node fixture.js alone, output piped", ms(med_piped), f"ratio {med_script / med_piped:.2f}x (target <= 1.25x)"),
        ("node fixture.js alone, output to /dev/null", ms(med_null), f"ratio {med_script / med_null:.2f}x"),
        ("bare CDP client: enable, one breakpoint, run (the floor)", ms(bare),
         f"ratio {bare / med_piped:.2f}x node alone; debug-mcp adds {ms(med_script - bare)}"),
        ("the same in the process itself: no client, no inspector port", ms(in_process),
         f"ratio {in_process / med_piped:.2f}x node alone: V8's Debugger.enable"),
        ("debug-script, 10,000 hits", ms(hits_time), "target < 2000 ms"),
        ("spawn to tools/list answer (median of 30)", ms(startup), "target < 5 ms"),
        (f"tools/list: names, descriptions, inputSchemas ({tool_count} tools)", f"{facing} B",
         f"target <= 10000 B; the whole answer {whole} B"),
        ("initialize's instructions", f"{instructions} B", "target <= 2048 B"),
        ("debug-continue to the next hit (median of 30)", ms(session_resume), "with stop state: location, source, locals"),
        ("bare CDP: resume to the next Debugger.paused", ms(raw_resume), f"debug-mcp adds {ms(session_resume - raw_resume)}"),
        ("debug-step over (median of 30)", ms(session_step), ""),
        ("bare CDP: stepOver to Debugger.paused", ms(raw_step), f"debug-mcp adds {ms(session_step - raw_step)}"),
        ("bare CDP: Runtime.evaluate round trip", ms(raw_evaluate), ""),
        ("Python session (own debugger): debug-continue to the next hit (median of 30)",
         ms(python_resume) if python_resume else "no debugpy", "target < 50 ms"),
        ("Python session (own debugger): debug-step over (median of 30)",
         ms(python_step) if python_step else "no debugpy", "target < 50 ms"),
        ("Python attached (debugpy --listen): debug-continue (median of 30)",
         ms(attached_resume) if attached_resume else "no debugpy", "target < 50 ms"),
        ("Python attached (debugpy --listen): debug-step over (median of 30)",
         ms(attached_step) if attached_step else "no debugpy", "target < 50 ms"),
        ("server peak RSS (VmHWM), after the calls above", f"{rss / 1024:.1f} MiB", "target < 10 MiB"),
        ("stop state at a breakpoint in express's router",
         f"{stop_sizes[0]} B" if stop_sizes else "npm install failed", "structuredContent, bytes"),
        ("stop state at a breakpoint in semver's Range.test",
         f"{stop_sizes[1]} B" if stop_sizes else "npm install failed", "structuredContent, bytes"),
        (f"breakpoint via a {map_mb:.0f} MB map in a {bundle_mb:.0f} MB bundle", ms(statistics.median(mapped)), ""),
        ("same bundle, breakpoint set in the bundle itself", ms(statistics.median(plain)),
         f"map cost {ms(statistics.median(mapped) - statistics.median(plain))}"),
        ("server peak RSS after the large-map calls", f"{rss_big / 1024:.1f} MiB", ""),
        ("the binary measured, stripped", f"{size / 1024:.0f} KiB", os.path.relpath(BINARY, ROOT)),
        ("crates in cargo tree (incl. debug-mcp)", str(crates), ""),
    ]
    for name, alone, followed in follow or []:
        rows.append((f"{name}, alone (median of 5)", ms(alone), ""))
        rows.append((f"{name}, every process followed", ms(followed),
                     f"+{ms(followed - alone)}, {followed / alone:.2f}x"))
    if follow is None:
        rows.append(("following children (node --test, jest)", "no fixtures/node_modules", "npm install --prefix fixtures"))
    rows += python_rows(runs)
    rows += static_rows(runs, med_script, hits_time, startup, session_resume)
    width = max(len(r[0]) for r in rows)
    for name, value, note in rows:
        print(f"{name:<{width}}  {value:>12}  {note}")


def static_rows(runs, med_script, hits_time, startup, session_resume):
    """The same figures with the static build, when .ci/dist made it: its speed cost."""
    if not os.path.exists(DIST):
        return [("static build (bash .ci/dist)", "not built", "")]
    if os.path.realpath(DIST) == os.path.realpath(BINARY):
        return [("static build", "measured above", "DEBUG_MCP_BIN is the static build")]
    server = Server(DIST)
    server.initialize()
    debug_script(server, f"node {FIXTURE}", FIXTURE, 5, "total")
    script = [timed(lambda: debug_script(server, f"node {FIXTURE}", FIXTURE, 5, "total"))[0] for _ in range(runs)]
    hits, result = timed(lambda: debug_script(server, f"node {COUNT} 10000", COUNT, 6, "i"))
    assert len(result["results"]) == 10000
    resume, _ = session_cycles(server, 30, f"node {COUNT} 100000000", COUNT, 6)
    rss = server.peak_rss_kib()
    server.close()
    start = statistics.median(spawn_to_tools_list(DIST) for _ in range(30))
    ms = lambda s: f"{s * 1000:.1f} ms"
    versus = lambda a, b: f"release {ms(b)}: {a / b:.2f}x"
    med = statistics.median(script)
    return [
        ("static build: size", f"{os.path.getsize(DIST) / 1024:.0f} KiB", "goal <= 2048 KiB"),
        ("static build: debug-script, 3 hits (median)", ms(med), versus(med, med_script)),
        ("static build: debug-script, 10,000 hits", ms(hits), versus(hits, hits_time)),
        ("static build: debug-continue (median of 30)", ms(resume), versus(resume, session_resume)),
        ("static build: spawn to tools/list (median of 30)", ms(start), versus(start, startup)),
        ("static build: server peak RSS", f"{rss / 1024:.1f} MiB", ""),
    ]


if __name__ == "__main__":
    main()
