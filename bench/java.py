#!/usr/bin/env python3
"""The JVM, in one run: debug-script's answers on Java against the program alone and against
bare JDWP clients (stdlib Python, no debug-mcp) doing the least a debugger must. Prints
figures and targets; asserts nothing.

Figures (medians of --runs):
  - a value at a line hit 3 times (fixtures/java/orders, Orders.java:32) against `java` alone,
    and the floor: a bare client that only lets the JVM go and closes at VM_DEATH;
  - 10,000 hits (fixtures/java/bench/Loop.java:4), against bare clients that only resume at
    each hit, that read a local and resume in one write (the floor of a value per hit), and
    that read the frame and a local at each (two requests);
  - `calls` on 10,000 calls of a method, against the program alone and a bare client that
    only receives a breakpoint event per call (no suspension);
  - a failing JUnit 5 suite with `failures`, against the suite alone (when JUnit is here);
  - a session: median `debug-continue` to the next hit, and a step over (target: 5 ms).

Usage: python3 bench/java.py [--runs N]   (builds target/release/debug-mcp-server first)
"""

import json
import os
import socket
import statistics
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402  (the binary and its build)

ROOT = bench.ROOT
RUNS = int(sys.argv[sys.argv.index("--runs") + 1]) if "--runs" in sys.argv else 5
OUT = os.path.join(ROOT, "target", "bench", "java")
ORDERS = os.path.join(ROOT, "fixtures", "java", "orders", "src")
LOOP = os.path.join(ROOT, "fixtures", "java", "bench", "Loop.java")
JUNIT = "/usr/share/java/junit-platform-console-standalone.jar"


def compile_fixtures():
    main = [os.path.join(ORDERS, "main", "java", "app", f) for f in ("Main.java", "Orders.java")]
    subprocess.run(["javac", "-g", "-d", os.path.join(OUT, "main")] + main, check=True)
    subprocess.run(["javac", "-g", "-d", os.path.join(OUT, "loop"), LOOP], check=True)
    if os.path.exists(JUNIT):
        test = os.path.join(ORDERS, "test", "java", "app", "OrdersTest.java")
        subprocess.run(["javac", "-g", "-cp", JUNIT, "-d", os.path.join(OUT, "test")] + main + [test],
                       check=True)


def timed(command, cwd=ROOT):
    start = time.perf_counter()
    subprocess.run(command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return time.perf_counter() - start


def median(function):
    return statistics.median(function() for _ in range(RUNS))


def run(*args, cwd=ROOT):
    """debug-mcp-server run ARGS, timed; its answer checked to be one."""
    start = time.perf_counter()
    done = subprocess.run([bench.BINARY, "run"] + list(args), cwd=cwd, capture_output=True)
    elapsed = time.perf_counter() - start
    answer = json.loads(done.stdout)
    assert "error" not in answer, answer
    return elapsed


class Bare:
    """A bare JDWP client: listens, starts the JVM to connect to it, shakes hands."""

    def __init__(self, java_args):
        server = socket.socket()
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        port = server.getsockname()[1]
        agent = f"-agentlib:jdwp=transport=dt_socket,server=n,suspend=y,address=127.0.0.1:{port}"
        self.proc = subprocess.Popen(["java", agent] + java_args, stdout=subprocess.DEVNULL)
        self.sock, _ = server.accept()
        server.close()
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.sendall(b"JDWP-Handshake")
        assert self.sock.recv(14) == b"JDWP-Handshake"
        self.buffer, self.id, self.held = b"", 0, []

    def read(self, n):
        while len(self.buffer) < n:
            data = self.sock.recv(65536)
            if not data:
                raise EOFError
            self.buffer += data
        taken, self.buffer = self.buffer[:n], self.buffer[n:]
        return taken

    def packet(self):
        header = self.read(11)
        length, ident, flags = struct.unpack(">IIB", header[:9])
        return ident, flags, self.read(length - 11)

    def send(self, command_set, command, data=b""):
        self.id += 1
        self.sock.sendall(struct.pack(">IIBBB", 11 + len(data), self.id, 0, command_set, command) + data)
        return self.id

    def request(self, command_set, command, data=b""):
        sent = self.send(command_set, command, data)
        while True:
            ident, flags, data = self.packet()
            if flags & 0x80 and ident == sent:
                return data
            self.held.append((ident, flags, data))

    def event(self):
        while True:
            ident, flags, data = self.held.pop(0) if self.held else self.packet()
            if not flags & 0x80:
                return data

    def close(self):
        self.sock.close()
        self.proc.wait()


def bare_resume_only(java_args):
    """The floor of a run: let the JVM go, close at VM_DEATH."""
    start = time.perf_counter()
    client = Bare(java_args)
    while True:
        event = client.event()
        if event[5] == 90:  # VM_START
            client.send(1, 9)
        if event[5] == 99:  # VM_DEATH
            break
    client.close()
    return time.perf_counter() - start


def bare_hits(mode, policy=1):
    """10,000 hits of Loop.step's first line, a bare client doing at each: `resume` only;
    `pipelined`, the local `total` read at a guessed frame id and the thread resumed in one
    write, the reply not waited for (the least a debugger reading a value can do); `read`,
    the frame read then the local, then resume (two round trips). With `policy` 0 (no
    suspension), only the events are counted (what counting calls past the cap costs)."""
    start = time.perf_counter()
    client = Bare(["-cp", os.path.join(OUT, "loop"), "Loop"])
    client.request(1, 7)
    name = b"Loop"
    client.request(15, 1, struct.pack(">BBIBI", 8, 2, 1, 5, len(name)) + name)
    client.request(1, 9)
    while True:
        event = client.event()
        if event[5] == 8:
            break
        client.send(1, 9)
    klass = event[19:27]
    methods = client.request(2, 5, klass)
    count, at, step = struct.unpack(">I", methods[:4])[0], 4, None
    for _ in range(count):
        method = methods[at:at + 8]
        at += 8
        length = struct.unpack(">I", methods[at:at + 4])[0]
        method_name = methods[at + 4:at + 4 + length]
        at += 4 + length
        length = struct.unpack(">I", methods[at:at + 4])[0]
        at += 4 + length + 4
        if method_name == b"step":
            step = method
    lines = client.request(6, 1, klass + step)
    index = lines[20:28]
    location = b"\x01" + klass + step + index
    client.request(15, 1, struct.pack(">BBIB", 2, policy, 1, 7) + location)
    client.send(1, 9)
    top, resumes = None, 0
    while True:
        try:
            event = client.event()
        except EOFError:
            break
        if event[5] == 99:
            break
        if event[5] == 2 and policy != 0:
            thread = event[10:18]
            if mode == "read" or (mode == "pipelined" and top is None):
                frames = client.request(11, 6, thread + struct.pack(">ii", 0, 1))
                top, resumes = struct.unpack(">Q", frames[4:12])[0], 0
                client.request(16, 1, thread + frames[4:12] + struct.pack(">IiB", 1, 0, ord("J")))
                client.send(11, 3, thread)
            elif mode == "pipelined":
                resumes += 1
                frame = struct.pack(">Q", top + (resumes << 16))
                read = struct.pack(">IIBBB", 11 + 25, 0x7FFF0000, 0, 16, 1) + thread + frame \
                    + struct.pack(">IiB", 1, 0, ord("J"))
                go = struct.pack(">IIBBB", 11 + 8, 0x7FFF0001, 0, 11, 3) + thread
                client.sock.sendall(read + go)
            else:
                client.send(11, 3, thread)
    client.close()
    return time.perf_counter() - start


def main():
    bench.build()
    compile_fixtures()
    orders = os.path.join(ROOT, "fixtures", "java", "orders")
    main_cp = ["-cp", os.path.join(OUT, "main"), "app.Main"]
    alone = median(lambda: timed(["java"] + main_cp))
    floor = median(lambda: bare_resume_only(main_cp))
    line = os.path.join(ORDERS, "main", "java", "app", "Orders.java") + ":32"
    three = median(lambda: run("--break", line, "--eval", "total", "--", "java", *main_cp, cwd=orders))
    print(f"3 hits: java alone {alone * 1000:.0f} ms; bare client (resume, close at VM_DEATH) "
          f"{floor * 1000:.0f} ms; debug-script {three * 1000:.0f} ms = alone + "
          f"{(three - alone) * 1000:.0f} ms (target: at most + 150 ms)")

    loop_cp = ["-cp", os.path.join(OUT, "loop"), "Loop"]
    loop_alone = median(lambda: timed(["java"] + loop_cp))
    hits = median(lambda: run("--break", LOOP + ":4", "--eval", "total", "--", "java", *loop_cp))
    bare_go = median(lambda: bare_hits("resume"))
    bare_pipelined = median(lambda: bare_hits("pipelined"))
    bare_read = median(lambda: bare_hits("read"))
    print(f"10,000 hits: debug-script {hits:.2f} s (target: at most 2 s); bare clients: resuming "
          f"only {bare_go:.2f} s, reading `total` and resuming in one write (replies not waited "
          f"for) {bare_pipelined:.2f} s, reading the frame then the local {bare_read:.2f} s; the "
          f"program alone {loop_alone * 1000:.0f} ms")

    calls = median(lambda: run("--calls", LOOP + ":step", "--", "java", *loop_cp))
    counted = median(lambda: bare_hits("resume", policy=0))
    print(f"calls on 10,000 calls: {calls:.2f} s = {calls / loop_alone:.1f}x the program alone "
          f"(target: at most 3x); a bare client only receiving the 10,000 breakpoint events "
          f"(no suspension) {counted:.2f} s = {counted / loop_alone:.1f}x")

    server = bench.Server()
    server.initialize()
    resume, step = bench.session_cycles(server, 20, f"java -cp {os.path.join(OUT, 'loop')} Loop 100",
                                        LOOP, 4)
    server.close()
    print(f"session: debug-continue to the next hit {resume * 1000:.1f} ms, a step "
          f"{step * 1000:.1f} ms (target: at most 5 ms)")

    if os.path.exists(JUNIT):
        suite = ["java", "-jar", JUNIT, "-cp", os.path.join(OUT, "test"), "--select-class",
                 "app.OrdersTest", "--disable-banner"]
        suite_alone = median(lambda: timed(suite, cwd=orders))
        failures = median(lambda: run("--failures", "--", *suite, cwd=orders))
        print(f"a failing JUnit 5 suite with failures: {failures:.2f} s against {suite_alone:.2f} s "
              f"alone ({failures / suite_alone:.2f}x)")
    else:
        print(f"no JUnit ({JUNIT}): apt-get install junit5")


if __name__ == "__main__":
    main()
