#!/usr/bin/env python3
"""Native adapters, in one run: a C debug-script call with 2,000 hits (lldb-dap) against the
program alone; Go's `go run .` with Delve against `go run .` alone; and session latency
(median debug-continue to the next breakpoint hit, median debug-step) through debug-mcp for
lldb-dap and Delve, against the same cycles driven by a bare DAP client (stdlib Python,
`continue` or `next`, the `stopped` event, one `stackTrace`). Prints figures and targets;
asserts nothing.

Usage: python3 bench/native.py [--runs N]   (builds target/release/debug-mcp-server first)
"""

import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import queue
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402  (the MCP client and the session cycles)

ROOT = bench.ROOT
RUNS = int(sys.argv[sys.argv.index("--runs") + 1]) if "--runs" in sys.argv else 3
CYCLES = 20
OUT = os.path.join(ROOT, "target", "bench")
C_SOURCE = os.path.join(ROOT, "fixtures", "native", "c", "loop.c")
GO_LOOP = """package main

func add(sum float64, x float64) float64 {
	next := sum + x
	return next
}

func main() {
	sum := 0.0
	for i := 0; i < 100000; i++ {
		sum = add(sum, float64(i))
	}
	println(int(sum))
}
"""


def timed(command, cwd=ROOT):
    start = time.perf_counter()
    subprocess.run(command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=True)
    return time.perf_counter() - start


def _timed_env(command, cwd, env):
    start = time.perf_counter()
    subprocess.run(command, cwd=cwd, env=env, capture_output=True)
    return time.perf_counter() - start


def median(command, cwd=ROOT):
    return statistics.median(timed(command, cwd) for _ in range(RUNS))


class BareDap:
    """A bare DAP client: Content-Length framing over stdio or TCP, a reader thread."""

    def __init__(self, command, cwd, tcp):
        self.proc = subprocess.Popen(command, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL)
        if tcp:
            line = self.proc.stdout.readline().decode()
            port = int(line.strip().rsplit(":", 1)[1])
            sock = socket.create_connection(("127.0.0.1", port))
            self.reader, self.writer = sock.makefile("rb"), sock.makefile("wb")
            threading.Thread(target=lambda: [None for _ in self.proc.stdout], daemon=True).start()
        else:
            self.reader, self.writer = self.proc.stdout, self.proc.stdin
        self.seq, self.messages = 0, queue.Queue()
        threading.Thread(target=self.read, daemon=True).start()

    def read(self):
        while True:
            headers = {}
            while True:
                line = self.reader.readline()
                if not line:
                    return
                line = line.decode().strip()
                if not line:
                    break
                key, value = line.split(":", 1)
                headers[key] = value.strip()
            self.messages.put(json.loads(self.reader.read(int(headers["Content-Length"]))))

    def send(self, command, arguments):
        self.seq += 1
        body = json.dumps({"seq": self.seq, "type": "request", "command": command, "arguments": arguments}).encode()
        self.writer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.writer.flush()
        return self.seq

    def wait(self, matches, timeout=60):
        deadline = time.monotonic() + timeout
        while True:
            message = self.messages.get(timeout=max(0.01, deadline - time.monotonic()))
            if matches(message):
                return message

    def request(self, command, arguments):
        seq = self.send(command, arguments)
        return self.wait(lambda m: m.get("type") == "response" and m.get("request_seq") == seq)

    def close(self):
        self.proc.kill()
        self.proc.wait()


def bare_cycles(command, cwd, tcp, launch, file, line):
    dap = BareDap(command, cwd, tcp)
    dap.request("initialize", {"adapterID": "bench", "linesStartAt1": True, "columnsStartAt1": True, "pathFormat": "path"})
    dap.send("launch", launch)
    dap.wait(lambda m: m.get("event") == "initialized")
    dap.request("setBreakpoints", {"source": {"path": file}, "breakpoints": [{"line": line}]})
    dap.request("configurationDone", {})
    stopped = dap.wait(lambda m: m.get("event") == "stopped")
    thread = stopped["body"]["threadId"]
    resume, step = [], []
    for _ in range(CYCLES):
        for command, into in (("continue", resume), ("next", step)):
            start = time.perf_counter()
            dap.send(command, {"threadId": thread})
            dap.wait(lambda m: m.get("event") == "stopped")
            dap.request("stackTrace", {"threadId": thread, "levels": 1})
            into.append(time.perf_counter() - start)
    dap.close()
    return statistics.median(resume), statistics.median(step)


def bare_logpoints(adapter, loop, hits):
    """lldb-dap alone, launched by a bare client: a logpoint with a constant message at the
    same line, from spawning the adapter to `terminated` (the floor under debug-script)."""
    start = time.perf_counter()
    dap = BareDap(adapter, OUT, False)
    dap.request("initialize", {"adapterID": "bench", "linesStartAt1": True, "columnsStartAt1": True, "pathFormat": "path"})
    dap.send("launch", {"program": loop, "args": [str(hits)], "cwd": OUT})
    dap.wait(lambda m: m.get("event") == "initialized")
    dap.request("setBreakpoints", {"source": {"path": C_SOURCE}, "breakpoints": [{"line": 15, "logMessage": "x"}]})
    dap.request("configurationDone", {})
    dap.wait(lambda m: m.get("event") == "terminated")
    elapsed = time.perf_counter() - start
    dap.close()
    return elapsed


def main():
    bench.build()
    os.makedirs(OUT, exist_ok=True)
    loop = os.path.join(OUT, "loop")
    subprocess.run(["gcc", "-g", "-O0", "-o", loop, C_SOURCE], check=True)
    alone = median([loop, "2000"])
    traced = median([bench.BINARY, "run", "--break", f"{C_SOURCE}:15", "--eval", "o->total",
                     "--max-hits", "5000", "--", loop, "2000"])
    lldb = subprocess.run(["sh", "-c", "command -v lldb-dap || ls /usr/bin/lldb-dap-* | tail -1"],
                          stdout=subprocess.PIPE, text=True).stdout.strip()
    floor = statistics.median(bare_logpoints([lldb], loop, 2000) for _ in range(RUNS))
    print(f"C debug-script, 2,000 hits (lldb-dap): {traced:.2f} s   program alone {alone * 1000:.1f} ms"
          f"   lldb-dap alone with a constant logpoint {floor:.2f} s   target < 3 s")
    go = os.path.join(ROOT, "fixtures", "native", "go")
    alone = median(["go", "run", "."], go)
    traced = median([bench.BINARY, "run", "--break", os.path.join(go, "main.go:16"), "--eval", "o.Total",
                     "--", "go", "run", "."], go)
    print(f"Go debug-script, `go run .`, 2 hits (Delve): {traced:.2f} s   `go run .` alone {alone:.2f} s")

    # Why a suite fails, beside the suite alone: each measured in turn, in one run.
    suite = os.path.join(ROOT, "fixtures", "native", "go-suite")
    # (The suite fails: its exit code is not checked.)
    failing = lambda argv, cwd, env=os.environ: statistics.median(
        _timed_env(argv, cwd, env) for _ in range(RUNS))
    alone = failing(["go", "test", "./..."], suite)
    traced = failing([bench.BINARY, "run", "--failures", "--", "go", "test", "./..."], suite)
    print(f"Go `go test ./...` (2 packages) with failures: {traced:.2f} s   alone {alone:.2f} s"
          f"   +{traced - alone:.2f} s (target: at most +0.5 s)")
    crate = os.path.join(ROOT, "fixtures", "native", "rust-suite")
    env_target = {**os.environ, "CARGO_TARGET_DIR": os.path.join(OUT, "rust-suite")}
    cargo = ["cargo", "test", "-q", "--no-fail-fast"]
    subprocess.run(cargo, cwd=crate, env=env_target, capture_output=True)
    alone = failing(cargo, crate, env_target)
    traced = failing([bench.BINARY, "run", "--failures", "--"] + cargo, crate, env_target)
    print(f"Rust `cargo test` (3 test programs) with failures: {traced:.2f} s   alone {alone:.2f} s"
          f"   {traced / alone:.2f}x (target 1.25x)")

    goloop = os.path.join(OUT, "goloop")
    os.makedirs(goloop, exist_ok=True)
    with open(os.path.join(goloop, "go.mod"), "w") as f:
        f.write("module example.com/goloop\n\ngo 1.19\n")
    with open(os.path.join(goloop, "main.go"), "w") as f:
        f.write(GO_LOOP)
    gobin = os.path.join(goloop, "goloop")
    subprocess.run(["go", "build", "-gcflags=all=-N -l", "-o", gobin, "."], cwd=goloop, check=True)
    gofile = os.path.join(goloop, "main.go")

    rows = [
        ("lldb-dap (C)", f"{loop} 100000", C_SOURCE, 15, [lldb], OUT, False,
         {"program": loop, "args": ["100000"], "cwd": OUT}),
        ("Delve (Go)", gobin, gofile, 4, ["dlv", "dap", "--listen", "127.0.0.1:0"], goloop, True,
         {"mode": "exec", "program": gobin}),
    ]
    print(f"\nSession latency, median of {CYCLES} cycles (target: a step under 20 ms)")
    for name, command, file, line, adapter, cwd, tcp, launch in rows:
        server = bench.Server()
        server.initialize()
        ours = bench.session_cycles(server, CYCLES, command, file, line)
        server.close()
        bare = bare_cycles(adapter, cwd, tcp, launch, file, line)
        print(f"  {name:14} debug-continue {ours[0] * 1000:6.1f} ms   debug-step {ours[1] * 1000:6.1f} ms"
              f"   | bare DAP client: continue {bare[0] * 1000:6.1f} ms   next {bare[1] * 1000:6.1f} ms")


if __name__ == "__main__":
    main()
