#!/usr/bin/env python3
"""debug-mcp as users install it: each artifact of `packaging/build` (target/dist/) installed
from its local file, without the network, into a scratch directory or venv, then driven
through the installed command as an MCP client does: initialize, tools/list, one
debug-script call, and stdin closed (exit 0). Also: the npm launcher passes signals on and
says what to do on a platform it has no binary for.

Usage: python3 tests/clients/installed.py   (after `bash packaging/build`; stdlib only; run
with an interpreter whose bin/ has uvx and pipx, as .ci/run's venv does, to try those too)
"""

import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DIST = os.path.join(ROOT, "target", "dist")
passed = failed = 0


def check(ok, what):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print(f"FAILED: {what}", file=sys.stderr)


def one(pattern):
    found = glob.glob(os.path.join(DIST, pattern))
    if len(found) != 1:
        sys.exit(f"expected one {pattern} in {DIST} (run `bash packaging/build`), found {found}")
    return found[0]


class Server:
    def __init__(self, command):
        self.proc = subprocess.Popen(command, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.next_id = 1

    def request(self, method, params):
        rid = self.next_id
        self.next_id += 1
        self.proc.stdin.write((json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}) + "\n").encode())
        self.proc.stdin.flush()
        deadline = time.time() + 60
        while time.time() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            message = json.loads(line)
            if message.get("id") == rid:
                return message
        raise SystemExit(f"no answer to {method}")


def drive(name, command):
    """tools/list and one debug-script call through `command`, then stdin closed."""
    server = Server(command)
    init = server.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                         "clientInfo": {"name": "installed", "version": "0"}})
    check(init["result"]["serverInfo"]["name"] == "debug-mcp", f"{name}: initialize {init}")
    tools = server.request("tools/list", {})["result"]["tools"]
    check(tools[0]["name"] == "debug-script" and len(tools) == 13, f"{name}: tools/list {[t['name'] for t in tools]}")
    answer = server.request("tools/call", {"name": "debug-script", "arguments": {
        "command": "node fixtures/loop.js", "breakpoint": {"file": "fixtures/loop.js", "line": 5},
        "expression": "total"}})["result"]["structuredContent"]
    values = [r["value"] for r in answer.get("results", [])]
    check(values == [0, 10, 25], f"{name}: debug-script {answer}")
    server.proc.stdin.close()
    check(server.proc.wait(timeout=10) == 0, f"{name}: exit on end of input")


def npm(scratch):
    prefix = os.path.join(scratch, "npm")
    os.makedirs(prefix)
    platform, main = one("debug-mcp-server-linux-x64-*.tgz"), one("debug-mcp-server-[0-9]*.tgz")
    subprocess.run(["npm", "install", "--offline", "--no-audit", "--no-fund", "--loglevel=error",
                    "--prefix", prefix, platform, main], check=True)
    command = os.path.join(prefix, "node_modules", ".bin", "debug-mcp-server")
    drive("npm", [command])

    # A signal to the launcher reaches the binary; the launcher ends as the binary did.
    server = Server([command])
    server.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                  "clientInfo": {"name": "installed", "version": "0"}})
    binary = None
    for _ in range(100):
        children = subprocess.run(["pgrep", "-P", str(server.proc.pid)], capture_output=True, text=True).stdout.split()
        if children:
            binary = int(children[0])
            break
        time.sleep(0.05)
    server.proc.send_signal(signal.SIGTERM)
    code = server.proc.wait(timeout=10)
    check(code == 0, f"npm: after SIGTERM the launcher exits as the binary does (0 after cleaning up), got {code}")
    check(binary is not None and not os.path.exists(f"/proc/{binary}"), "npm: the binary ended with SIGTERM")

    # A platform without a binary: what to do instead.
    fake = os.path.join(scratch, "elsewhere.js")
    with open(fake, "w") as f:
        f.write("Object.defineProperty(process, 'platform', {value: 'sunos'});\n")
    launcher = os.path.join(prefix, "node_modules", "debug-mcp-server", "bin", "debug-mcp-server.js")
    elsewhere = subprocess.run(["node", "-r", fake, launcher], capture_output=True, text=True)
    check(elsewhere.returncode == 1 and "served: linux-x64" in elsewhere.stderr
          and "cargo install debug-mcp-server" in elsewhere.stderr, f"npm elsewhere: {elsewhere.stderr}")


def pypi(scratch):
    venv = os.path.join(scratch, "venv")
    subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    subprocess.run([os.path.join(venv, "bin", "pip"), "install", "--quiet", "--no-index",
                    "--disable-pip-version-check", one("debug_mcp_server-*.whl")], check=True)
    drive("pypi", [os.path.join(venv, "bin", "debug-mcp-server")])
    # The one-liners, where uv and pipx are at hand (.ci/run's venv has them): offline too.
    tools = os.path.dirname(sys.executable)
    uvx, pipx = os.path.join(tools, "uvx"), os.path.join(tools, "pipx")
    if os.path.exists(uvx):
        os.environ["UV_CACHE_DIR"] = os.path.join(scratch, "uv-cache")
        drive("uvx", [uvx, "--offline", "--from", one("debug_mcp_server-*.whl"), "debug-mcp-server"])
    else:
        print(f"uvx not in {tools}: `uvx debug-mcp-server` not tried")
    if os.path.exists(pipx):
        os.environ["PIPX_HOME"] = os.path.join(scratch, "pipx")
        os.environ["PIP_NO_INDEX"] = "1"
        drive("pipx run", [pipx, "run", "--spec", one("debug_mcp_server-*.whl"), "debug-mcp-server"])
    else:
        print(f"pipx not in {tools}: `pipx run debug-mcp-server` not tried")


def cargo(scratch):
    """The crate as crates.io would serve it, built and installed offline (a debug build, to
    keep it quick; the dependencies come from the repository's own target directory)."""
    crate = one("debug-mcp-server-*.crate")
    subprocess.run(["tar", "xzf", crate, "-C", scratch], check=True)
    source = glob.glob(os.path.join(scratch, "debug-mcp-server-*"))[0]
    root = os.path.join(scratch, "cargo")
    subprocess.run(["cargo", "install", "--quiet", "--offline", "--locked", "--debug", "--path", source,
                    "--root", root, "--target-dir", os.path.join(ROOT, "target", "install-check")], check=True)
    drive("cargo", [os.path.join(root, "bin", "debug-mcp-server")])


def main():
    scratch = tempfile.mkdtemp(prefix="dmcp-installed-")
    try:
        npm(scratch)
        pypi(scratch)
        cargo(scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
