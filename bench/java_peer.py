#!/usr/bin/env python3
"""debug-mcp beside the peer that debugs Java (`@debugmcp/mcp-debugger`, its JDI bridge) on the
same two tasks, in one run: time, bytes of answers, calls, and what each answered.

Usage: python3 bench/java_peer.py --peer PATH/TO/mcp-debugger/dist/cli.mjs [--java-home DIR] [--runs N]

  (npm install @debugmcp/mcp-debugger in a scratch folder; the peer needs Java 21 or later:
  --java-home defaults to the first such JDK under /usr/lib/jvm.)

Tasks, on a copy of fixtures/java/orders in the default package (the peer launches a class by
its `.java` file's name only, so a packaged `app.Main` cannot be launched by it):
  - the value of `total` at each of the 3 hits of Orders.total's loop line: debug-mcp's one
    `debug-script` call; the peer's session (create, breakpoint, start, then for each hit
    its locals and a continue), polling its locals every 50 ms until the stop is there;
  - why OrdersTest fails: debug-mcp's `debug-script` with `failures` on JUnit's console
    launcher as typed; the peer's session with a breakpoint on the failing assertion's line
    (it has no exception stops), run through a `main` that calls the console launcher, its
    locals there, then its output.
Nothing here asserts.
"""

import argparse
import glob
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402

ORDERS = os.path.join(bench.ROOT, "fixtures", "java", "orders", "src")
JUNIT = "/usr/share/java/junit-platform-console-standalone.jar"


class Client(bench.Server):
    """An MCP server over stdio (`bench.Server`'s requests), counting the bytes of its
    tools/call answers."""

    def __init__(self, command, env):
        self.proc = subprocess.Popen(command, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL)
        self.next_id, self.bytes, self.calls = 1, 0, 0
        self.initialize()

    def request(self, method, params):
        message = super().request(method, params)
        if method == "tools/call":
            self.bytes += self.last_bytes
            self.calls += 1
        return message

    def tool(self, name, arguments):
        result = self.request("tools/call", {"name": name, "arguments": arguments}).get("result", {})
        if "structuredContent" in result:
            return result["structuredContent"]
        try:
            return json.loads(result["content"][0]["text"])
        except (KeyError, IndexError, ValueError):
            return result

    def close(self):
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def flat_copy(into, javac):
    """The fixture's Main, Orders and OrdersTest without their package, a `main` that runs
    the tests through JUnit's console launcher, compiled; the assertion's and the loop's lines."""
    for name, part in (("Main", "main"), ("Orders", "main"), ("OrdersTest", "test")):
        with open(os.path.join(ORDERS, part, "java", "app", name + ".java")) as source:
            text = source.read().replace("package app;\n", "")
        with open(os.path.join(into, name + ".java"), "w") as copy:
            copy.write(text)
    with open(os.path.join(into, "RunTests.java"), "w") as runner:
        runner.write("public class RunTests {\n    public static void main(String[] args) {\n"
                     "        org.junit.platform.console.ConsoleLauncher.main(\"--class-path\", "
                     f"\"{into}/out\", \"--select-class\", \"OrdersTest\", \"--disable-banner\");\n"
                     "    }\n}\n")
    sources = [os.path.join(into, f + ".java") for f in ("Main", "Orders", "OrdersTest", "RunTests")]
    subprocess.run([javac, "-g", "-cp", JUNIT, "-d", os.path.join(into, "out")] + sources, check=True)

    def line_of(file, text):
        with open(os.path.join(into, file)) as source:
            return next(i for i, line in enumerate(source, 1) if text in line)
    return line_of("Orders.java", "total += item"), line_of("OrdersTest.java", "assertEquals(30.0")


def ours(env, into, loop_line, _assert_line):
    server = Client([bench.BINARY], env)
    start = time.time()
    answer = server.tool("debug-script", {
        "command": f"java -cp {into}/out Main", "expression": "total",
        "breakpoint": {"file": os.path.join(into, "Orders.java"), "line": loop_line}})
    three = (time.time() - start, server.bytes, server.calls,
             [r.get("value") for r in answer.get("results", [])])
    server.bytes = server.calls = 0
    start = time.time()
    answer = server.tool("debug-script", {
        "command": f"java -jar {JUNIT} --class-path {into}/out --select-class OrdersTest --disable-banner",
        "failures": True, "cwd": into})
    said = [f"{f.get('test')}: {f.get('message')} (locals {f['frames'][0].get('locals') if f.get('frames') else None})"
            for f in answer.get("failures", [])]
    failing = (time.time() - start, server.bytes, server.calls, said)
    server.close()
    return three, failing


def peer_locals(peer, session, names, deadline):
    """Polls the paused frame's locals until there are some (the stop came) or `deadline`."""
    while time.time() < deadline:
        found = peer.tool("get_local_variables", {"sessionId": session, "names": names} if names else
                          {"sessionId": session})
        if found.get("variables"):
            return {v["name"]: v["value"] for v in found["variables"]}
        time.sleep(0.05)
    return None


def peer_launch(client, file, line, main, classpath):
    """A peer session with a breakpoint at `file`:`line`, started on `main`'s class; its id."""
    session = client.tool("create_debug_session", {"language": "java"}).get("sessionId")
    client.tool("set_breakpoint", {"sessionId": session, "file": file, "line": line})
    client.tool("start_debugging", {"sessionId": session, "scriptPath": main,
                                    "dapLaunchArgs": {"classpath": classpath, "stopOnEntry": False}})
    return session


def peer(command, env, into, loop_line, assert_line):
    client = Client(command, env)
    start = time.time()
    session = peer_launch(client, os.path.join(into, "Orders.java"), loop_line,
                          os.path.join(into, "Main.java"), f"{into}/out")
    values = []
    for _ in range(3):
        found = peer_locals(client, session, ["total"], time.time() + 30)
        values.append(found and found.get("total"))
        client.tool("continue_execution", {"sessionId": session})
    client.tool("close_debug_session", {"sessionId": session})
    three = (time.time() - start, client.bytes, client.calls, values)
    client.bytes = client.calls = 0
    start = time.time()
    session = peer_launch(client, os.path.join(into, "OrdersTest.java"), assert_line,
                          os.path.join(into, "RunTests.java"), f"{into}/out:{JUNIT}")
    found = peer_locals(client, session, None, time.time() + 60)
    client.tool("continue_execution", {"sessionId": session})
    time.sleep(2)
    output = client.tool("get_output", {"sessionId": session})
    printed = "".join(e.get("output", "") for e in output.get("entries", []))
    client.tool("close_debug_session", {"sessionId": session})
    said = [f"stopped at the assertion, locals {found}",
            "its output holds the failure" if "expected: <30.0>" in printed else
            f"its output does not say the failure ({len(printed)} bytes: {printed.strip()[:80]!r})"]
    failing = (time.time() - start, client.bytes, client.calls, said)
    client.close()
    return three, failing


def newer_jdk():
    for release in sorted(glob.glob("/usr/lib/jvm/*/release")):
        with open(release) as text:
            for line in text:
                if line.startswith("JAVA_VERSION="):
                    major = line.split('"')[1].split(".")[0]
                    if major.isdigit() and int(major) >= 21 and os.path.exists(
                            os.path.join(os.path.dirname(release), "bin", "javac")):
                        return os.path.dirname(release)
    return None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--peer", required=True, help="the peer's dist/cli.mjs")
    parser.add_argument("--java-home", default=newer_jdk())
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    if not args.java_home:
        raise SystemExit("no JDK 21 or later under /usr/lib/jvm: give --java-home")
    signal.alarm(600)
    bench.build()
    env = dict(os.environ, JAVA_HOME=args.java_home,
               PATH=os.path.join(args.java_home, "bin") + os.pathsep + os.environ["PATH"])
    into = tempfile.mkdtemp(prefix="java-peer-")
    try:
        lines = flat_copy(into, os.path.join(args.java_home, "bin", "javac"))
        runs = {"debug-mcp": [], "peer": []}
        for _ in range(args.runs):
            runs["debug-mcp"].append(ours(env, into, *lines))
            runs["peer"].append(peer(["node", args.peer, "stdio"], env, into, *lines))
    finally:
        shutil.rmtree(into)
    print(f"Java: {args.java_home}; {args.runs} runs each, medians")
    for task, index in (("3 hits of a line, `total` at each", 0), ("why OrdersTest fails", 1)):
        print(f"\n{task}:")
        for who, results in runs.items():
            done = [r[index] for r in results]
            seconds = statistics.median(d[0] for d in done)
            print(f"  {who}: {seconds:.2f} s, {statistics.median(d[1] for d in done):.0f} bytes of "
                  f"answers in {done[0][2]} calls; answered: {done[-1][3]}")


if __name__ == "__main__":
    main()
