#!/usr/bin/env python3
"""Web pages, in one run: the time from asking debug-mcp to debug a page to its first stop (a
breakpoint in the page's script, debug-launch), and the time a debug-script call takes until
the page's load, against Chromium's own start-to-load time for the same page with the same
flags and no debugger (the page reports its load to the server; the browser's start is
measured from spawning it). Also Deno: `deno run` under debug-script against `deno run` alone.
Prints figures; asserts nothing.

Usage: python3 bench/page.py [--runs N]   (builds target/release/debug-mcp-server first)
"""

import http.server
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402  (the MCP client)

ROOT = bench.ROOT
RUNS = int(sys.argv[sys.argv.index("--runs") + 1]) if "--runs" in sys.argv else 5
WEB = os.path.join(ROOT, "fixtures", "web")
CART = os.path.join(WEB, "static", "cart.js")
# The page the baseline loads: the fixture's, plus a beacon the server timestamps on load.
BEACON = '<script>addEventListener("load", () => fetch("/loaded"))</script>'
FLAGS = ["--headless=new", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
         "--disable-extensions", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--disable-default-apps", "--disable-breakpad", "--mute-audio"]
if os.geteuid() == 0:
    FLAGS.append("--no-sandbox")

loaded = threading.Event()


class Handler(http.server.SimpleHTTPRequestHandler):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, directory=WEB, **kwargs)

    def do_GET(self):
        if self.path == "/loaded":
            loaded.set()
            self.send_response(204)
            self.end_headers()
            return
        if self.path == "/beacon/index.html":
            with open(os.path.join(WEB, "static", "index.html"), "rb") as f:
                page = f.read().replace(b'src="cart.js"', b'src="/static/cart.js"')
            page = page.replace(b"</body>", BEACON.encode() + b"</body>")
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)
            return
        super().do_GET()

    def log_message(self, *args):
        pass


def chromium_alone(port):
    """Spawn to the page's load event, reported by the page itself."""
    profile = tempfile.mkdtemp(prefix="bench-chromium-")
    loaded.clear()
    start = time.perf_counter()
    browser = subprocess.Popen(["chromium", *FLAGS, f"--user-data-dir={profile}",
                                f"http://127.0.0.1:{port}/beacon/index.html"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               start_new_session=True, env={**os.environ, "TMPDIR": profile})
    if not loaded.wait(30):
        raise SystemExit("the page never reported its load")
    elapsed = time.perf_counter() - start
    # Every process of the browser (they wrote in the profile while it was being removed, and
    # left it behind), then the profile, which holds its temporary files too.
    os.killpg(browser.pid, 9)
    browser.wait()
    shutil.rmtree(profile, ignore_errors=True)
    return elapsed


def call(server, name, arguments):
    response = server.request("tools/call", {"name": name, "arguments": arguments})
    result = response["result"]
    if result.get("isError"):
        raise SystemExit(f"{name} failed: {result['structuredContent']}")
    return result["structuredContent"]


def first_stop(server, port):
    start = time.perf_counter()
    state = call(server, "debug-launch", {"url": f"http://127.0.0.1:{port}/beacon/index.html",
                                          "breakpoints": [{"file": CART, "line": 4}]})
    elapsed = time.perf_counter() - start
    assert state["state"] == "paused", state
    call(server, "debug-stop", {})
    return elapsed


def script_to_load(server, port):
    start = time.perf_counter()
    result = call(server, "debug-script", {"url": f"http://127.0.0.1:{port}/beacon/index.html",
                                           "breakpoint": {"file": CART, "line": 4},
                                           "expression": "line"})
    elapsed = time.perf_counter() - start
    assert [r["value"] for r in result["results"]] == [3, 4], result
    return elapsed


def deno_rows():
    deno = os.path.join(ROOT, "fixtures", "node_modules", ".bin", "deno")
    program = os.path.join(ROOT, "fixtures", "deno", "orders.ts")
    if not os.path.exists(deno):
        return None

    def alone():
        start = time.perf_counter()
        subprocess.run([deno, "run", program], stdout=subprocess.DEVNULL, check=True)
        return time.perf_counter() - start

    server = bench.Server()
    server.initialize()

    def traced():
        start = time.perf_counter()
        result = call(server, "debug-script", {"command": f"{deno} run {program}",
                                               "expression": "total",
                                               "breakpoint": {"file": program, "line": 14}})
        elapsed = time.perf_counter() - start
        assert [r["value"] for r in result["results"]] == [9.5, 16.2, 5], result
        return elapsed

    alone()  # Deno's cache
    rows = (statistics.median(alone() for _ in range(RUNS)),
            statistics.median(traced() for _ in range(RUNS)))
    server.close()
    return rows


def main():
    bench.build()
    if not shutil.which("chromium"):
        raise SystemExit("chromium is not installed (apt-get install chromium)")
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    port = httpd.server_address[1]
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    chromium_alone(port)  # the first start reads the browser from disk
    alone = statistics.median(chromium_alone(port) for _ in range(RUNS))
    server = bench.Server()
    server.initialize()
    stops = statistics.median(first_stop(server, port) for _ in range(RUNS))
    scripts = statistics.median(script_to_load(server, port) for _ in range(RUNS))
    server.close()
    httpd.shutdown()
    print(f"Page (headless Chromium), median of {RUNS} runs:")
    print(f"  Chromium alone, spawn to the page's load event    {alone * 1000:7.0f} ms")
    print(f"  debug-launch to the first stop in the page's script {stops * 1000:5.0f} ms")
    print(f"  debug-script, whole run until the page's load      {scripts * 1000:6.0f} ms")
    deno = deno_rows()
    if deno:
        print(f"Deno (deno run orders.ts), median of {RUNS} runs:")
        print(f"  deno alone {deno[0] * 1000:7.0f} ms   debug-script (3 hits) {deno[1] * 1000:7.0f} ms")


if __name__ == "__main__":
    main()
