#!/usr/bin/env python3
"""Native adapters: a C debug-script call with 2,000 hits (lldb-dap) against the program alone,
and a Go call with 2 hits (Delve) against `go run` alone, in one run. Prints figures and the
targets; asserts nothing.

Usage: python3 bench/native.py [--runs N]   (uses target/release/debug-mcp; builds it first)
"""

import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUNS = int(sys.argv[sys.argv.index("--runs") + 1]) if "--runs" in sys.argv else 3


def timed(command, cwd=ROOT):
    start = time.perf_counter()
    subprocess.run(command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=True)
    return time.perf_counter() - start


def median(command, cwd=ROOT):
    return statistics.median(timed(command, cwd) for _ in range(RUNS))


def main():
    subprocess.run(["cargo", "build", "--release", "-q"], cwd=ROOT, check=True)
    binary = os.path.join(ROOT, "target/release/debug-mcp")
    out = os.path.join(ROOT, "target/bench")
    os.makedirs(out, exist_ok=True)
    loop = os.path.join(out, "loop")
    subprocess.run(["gcc", "-g", "-O0", "-o", loop, "fixtures/native/c/loop.c"], cwd=ROOT, check=True)
    source = os.path.join(ROOT, "fixtures/native/c/loop.c")
    alone = median([loop, "2000"])
    traced = median([binary, "run", "--break", f"{source}:15", "--eval", "o->total",
                     "--max-hits", "5000", "--", loop, "2000"])
    print(f"C, 2,000 hits (lldb-dap):   {traced:.2f} s   program alone {alone * 1000:.1f} ms   target < 3 s")
    go = os.path.join(ROOT, "fixtures/native/go")
    alone = median(["go", "run", "."], go)
    traced = median([binary, "run", "--break", os.path.join(go, "main.go:16"), "--eval", "o.Total",
                     "--", "go", "run", "."], go)
    print(f"Go, `go run .`, 2 hits (Delve): {traced:.2f} s   `go run .` alone {alone:.2f} s")


if __name__ == "__main__":
    main()
