#!/usr/bin/env python3
"""debug-mcp through the official MCP Python SDK, as a real client uses it.

Checks the handshake, tools/list, and that every structuredContent (success and error) validates
against the tool's outputSchema (the SDK validates too), plus progress and ping; then the same
without a handshake, as SDK 2.x's `mcp.Client` speaks MCP 2026-07-28. With SDK 1.x (no
`mcp.Client`), what a 1.x client does: the handshake over stdio and Streamable HTTP
(`streamablehttp_client`), a run and a session on each. Run by .ci/run in a venv with `mcp`
and `jsonschema`, and in one with `mcp<2`; locally:
    python3 -m venv target/venv && target/venv/bin/pip install mcp jsonschema
    cargo build --release && target/venv/bin/python tests/clients/python_sdk.py
Prints `N passed, 0 failed` and exits 1 on any failure.
"""

import asyncio
import os
import socket
import subprocess
import sys

import jsonschema
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BINARY = os.environ.get("DEBUG_MCP_BIN", os.path.join(ROOT, "target", "release", "debug-mcp-server"))

CASES = [
    # (arguments, expect_error, expected number of results or error text)
    ({"command": "node fixtures/count.js 2000", "breakpoint": {"file": "fixtures/count.js", "line": 6},
      "expression": "i"}, False, 2000),
    ({"command": "node fixtures/values.js", "breakpoint": {"file": "fixtures/values.js", "line": 28},
      "expression": "[big, sym, circular, nan, map]", "includeStack": True}, False, 1),
    ({"command": "node fixtures/syntax_error.js", "breakpoint": {"file": "fixtures/syntax_error.js", "line": 2},
      "expression": "1"}, True, "Process exited before breakpoint was hit"),
    ({"command": "node fixtures/loop.js", "breakpoint": {"file": "fixtures/loop.js", "line": 50},
      "expression": "1"}, True, "line 50 is past the end of"),
    ({"command": "node fixtures/loop.js", "breakpoint": {"file": "fixtures/loop.js", "line": 5}},
     True, "invalid argument `expression`: required"),
    # Every process is followed: a fork's line, and each test file's process of `node --test`
    # (hits with `pid`, the answer with `processes`, all in the outputSchema).
    ({"command": "node fixtures/children/fork.js", "breakpoint": {"file": "fixtures/children/fork.js", "line": 6},
      "expression": "process.argv[2]"}, False, 1),
    ({"command": "node --test fixtures/node-test", "breakpoint": {"file": "fixtures/node-test/square.js", "line": 4},
      "expression": "n"}, False, 3),
    # Probes: one without an expression answers the frame's locals (no type or value), and
    # failures, each as the schema says.
    ({"command": f"{sys.executable} -m pytest -q -p no:cacheprovider", "cwd": "fixtures/py/failing", "failures": True,
      "probes": [{"file": "prices.py", "line": 4}, {"file": "prices.py", "line": 5, "expression": "discounted"}]},
     False, 4),
]


async def main():
    passed, failed = 0, 0

    def check(ok, what):
        nonlocal passed, failed
        if ok:
            passed += 1
        else:
            failed += 1
            print(f"FAILED: {what}", file=sys.stderr)

    params = StdioServerParameters(command=BINARY, args=[], cwd=ROOT)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await asyncio.wait_for(session.initialize(), 10)
            check(init.server_info.name == "debug-mcp", f"server name {init.server_info}")
            tools = (await asyncio.wait_for(session.list_tools(), 10)).tools
            check(tools[0].name == "debug-script", f"tools {[t.name for t in tools]}")
            for tool in tools:
                jsonschema.Draft202012Validator.check_schema(tool.output_schema)
                jsonschema.Draft202012Validator.check_schema(tool.input_schema)
            schema = tools[0].output_schema
            for arguments, expect_error, expected in CASES:
                progress = []

                async def on_progress(value, total, message):
                    progress.append(value)

                result = await asyncio.wait_for(
                    session.call_tool("debug-script", arguments, progress_callback=on_progress), 60)
                content = result.structured_content
                try:
                    jsonschema.validate(content, schema)
                    check(True, "")
                except jsonschema.ValidationError as e:
                    check(False, f"{arguments}: structuredContent does not match outputSchema: {e.message}")
                check(bool(result.is_error) == expect_error, f"{arguments}: isError={result.is_error}")
                if expect_error:
                    check(content["error"].startswith(expected), f"{arguments}: error {content['error']}")
                else:
                    check(len(content["results"]) == expected, f"{arguments}: {len(content['results'])} results")
                    check(progress == sorted(set(progress)), f"progress not increasing: {progress}")
                    if expected > 1:
                        check(len(progress) >= 1, "no progress for a long call")
            # A session, validated against each tool's outputSchema as the SDK does.
            schemas = {t.name: t.output_schema for t in tools}
            # A Node session, then a Python one (this interpreter has debugpy: .ci/run's venv).
            steps = []
            for command, file in [("node fixtures/loop.js", "fixtures/loop.js"),
                                  (f"{sys.executable} fixtures/py/loop.py", "fixtures/py/loop.py")]:
                steps += [
                    ("debug-launch", {"command": command, "breakpoints": [{"file": file, "line": 5}]}, "paused"),
                    ("debug-evaluate", {"expression": "total"}, None),
                    ("debug-continue", {"step": "over"}, "paused"),
                    ("debug-stack", {}, None),
                    ("debug-variables", {}, None),
                    ("debug-sessions", {}, None),
                    ("debug-continue", {}, "paused"),
                    ("debug-output", {}, None),
                    ("debug-stop", {}, None),
                ]
            for name, arguments, state in steps:
                result = await asyncio.wait_for(session.call_tool(name, arguments), 60)
                content = result.structured_content
                jsonschema.validate(content, schemas[name])
                check(not result.is_error, f"{name}: {content}")
                if state:
                    check(content.get("state") == state, f"{name}: state {content.get('state')}")
            # Attached to a Python program that waits for its client under debugpy's listener.
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                port = s.getsockname()[1]
            program = subprocess.Popen(
                [sys.executable, "-m", "debugpy", "--listen", f"127.0.0.1:{port}", "--wait-for-client",
                 "fixtures/py/loop.py"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                attach = {"port": port, "breakpoints": [{"file": "fixtures/py/loop.py", "line": 5}]}
                for _ in range(200):  # until debugpy listens
                    result = await asyncio.wait_for(session.call_tool("debug-launch", attach), 60)
                    if (result.structured_content or {}).get("code") != "no_inspector":
                        break
                    await asyncio.sleep(0.05)
                jsonschema.validate(result.structured_content, schemas["debug-launch"])
                check(result.structured_content.get("state") == "paused", f"attached: {result.structured_content}")
                for name, arguments in [("debug-evaluate", {"expression": "total"}), ("debug-stop", {})]:
                    result = await asyncio.wait_for(session.call_tool(name, arguments), 60)
                    jsonschema.validate(result.structured_content, schemas[name])
                    check(not result.is_error, f"{name}: {result.structured_content}")
                check(program.wait(timeout=30) == 0, "the attached program runs on to its end")
            finally:
                program.kill()
                program.wait()
            await asyncio.wait_for(session.send_ping(), 10)
            check(True, "ping")
    await modern(check)
    print(f"{passed} passed, {failed} failed")
    return failed


async def modern(check):
    """The stateless revision (2026-07-28) through SDK 2.x's `mcp.Client`: `auto` picks it from
    `server/discover`; each answer validates against its tool's outputSchema; a long call's
    progress arrives; a session through debug-mcp's own Python debugger and a Node one."""
    import mcp

    params = StdioServerParameters(command=BINARY, args=[], cwd=ROOT)
    # The same over Streamable HTTP (`--http`, a free loopback port).
    http = subprocess.Popen([BINARY, "--http", "127.0.0.1:0"], cwd=ROOT, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    url = http.stderr.readline().split("serving MCP at ")[-1].strip()
    try:
        for mode, target in [("auto", params), ("2026-07-28", params), ("auto", url), ("legacy", url)]:
            await modern_client(check, mcp, mode, target)
        await crowd(check, mcp, url)
    finally:
        http.terminate()
        http.wait(timeout=30)


async def modern_client(check, mcp, mode, target):
    """One `mcp.Client` in `mode` on `target` (stdio parameters, or an HTTP URL)."""
    over = "http" if isinstance(target, str) else "stdio"
    mode_label = f"{mode} over {over}"
    async with mcp.Client(target, mode=mode) as client:
        mode = mode_label
        expected = "2025-11-25" if mode.startswith("legacy") else "2026-07-28"
        check(client.protocol_version == expected, f"{mode}: protocol {client.protocol_version}")
        # The server names itself in `server/discover`'s answer, which `auto` asks for.
        if mode.startswith("auto"):
            check(client.server_info is not None and client.server_info.name == "debug-mcp",
                  f"{mode}: server info {client.server_info}")
        tools = (await asyncio.wait_for(client.list_tools(), 10)).tools
        schemas = {t.name: t.output_schema for t in tools}
        progress = []

        async def on_progress(value, total, message):
            progress.append(value)

        arguments, _, expected = CASES[0]
        result = await asyncio.wait_for(
            client.call_tool("debug-script", arguments, progress_callback=on_progress), 60)
        jsonschema.validate(result.structured_content, schemas["debug-script"])
        check(len(result.structured_content["results"]) == expected, f"{mode}: debug-script results")
        check(len(progress) >= 1 and progress == sorted(set(progress)), f"{mode}: progress {progress}")
        for command, file in [(f"{sys.executable} fixtures/py/loop.py", "fixtures/py/loop.py"),
                              ("node fixtures/loop.js", "fixtures/loop.js")]:
            for name, arguments, state in [
                ("debug-launch", {"command": command, "breakpoints": [{"file": file, "line": 5}]}, "paused"),
                ("debug-evaluate", {"expression": "total"}, None),
                ("debug-continue", {"step": "over"}, "paused"),
                ("debug-variables", {}, None),
                ("debug-continue", {}, "paused"),
                ("debug-stop", {}, None),
            ]:
                result = await asyncio.wait_for(client.call_tool(name, arguments), 60)
                jsonschema.validate(result.structured_content, schemas[name])
                check(not result.is_error, f"{mode}: {name}: {result.structured_content}")
                if state:
                    check(result.structured_content.get("state") == state,
                          f"{mode}: {name}: state {result.structured_content.get('state')}")


async def crowd(check, mcp, url):
    """Many clients of one HTTP server at once: 40 handshake clients connected and idle (their
    keep-alive connections give way) do not keep another out, and 50 clients each running a
    `debug-script` call at the same time all get their answer."""
    from contextlib import AsyncExitStack

    async with AsyncExitStack() as stack:
        for _ in range(40):
            client = await stack.enter_async_context(mcp.Client(url, mode="legacy"))
            await asyncio.wait_for(client.list_tools(), 30)
        async with mcp.Client(url, mode="legacy") as late:
            tools = (await asyncio.wait_for(late.list_tools(), 30)).tools
            check(len(tools) > 0, "the 41st client is served beside 40 idle ones")

    arguments = {"command": "node fixtures/loop.js", "breakpoint": {"file": "fixtures/loop.js", "line": 5},
                 "expression": "total"}

    async def one():
        async with mcp.Client(url) as client:
            result = await asyncio.wait_for(client.call_tool("debug-script", arguments), 120)
            return [r["value"] for r in result.structured_content.get("results", [])]

    answers = await asyncio.gather(*[one() for _ in range(50)], return_exceptions=True)
    complete = [a for a in answers if a == [0, 10, 25]]
    check(len(complete) == 50, f"50 clients at once: {len(complete)} complete; "
          f"{[a for a in answers if a != [0, 10, 25]][:3]}")


async def one_x():
    """SDK 1.x's `ClientSession`, as clients built on it connect: stdio, then Streamable HTTP
    (`--http`, a handshake session with `Mcp-Session-Id`); on each the handshake, tools/list,
    a run and a Node session, every answer validated against its tool's outputSchema."""
    from mcp.client.streamable_http import streamablehttp_client

    passed, failed = 0, 0

    def check(ok, what):
        nonlocal passed, failed
        passed, failed = passed + bool(ok), failed + (not ok)
        if not ok:
            print(f"FAILED: {what}", file=sys.stderr)

    async def session_checks(session, over):
        init = await asyncio.wait_for(session.initialize(), 10)
        check(init.serverInfo.name == "debug-mcp", f"{over}: server name {init.serverInfo}")
        check(init.protocolVersion.startswith("2025-"), f"{over}: protocol {init.protocolVersion}")
        tools = (await asyncio.wait_for(session.list_tools(), 10)).tools
        schemas = {t.name: t.outputSchema for t in tools}
        for arguments, expect_error, expected in [CASES[0], CASES[2]]:
            result = await asyncio.wait_for(session.call_tool("debug-script", arguments), 60)
            jsonschema.validate(result.structuredContent, schemas["debug-script"])
            check(bool(result.isError) == expect_error, f"{over}: {arguments}: isError={result.isError}")
        for name, arguments, state in [
            ("debug-launch", {"command": "node fixtures/loop.js",
                              "breakpoints": [{"file": "fixtures/loop.js", "line": 5}]}, "paused"),
            ("debug-evaluate", {"expression": "total"}, None),
            ("debug-continue", {"step": "over"}, "paused"),
            ("debug-stack", {}, None),
            ("debug-stop", {}, None),
        ]:
            result = await asyncio.wait_for(session.call_tool(name, arguments), 60)
            jsonschema.validate(result.structuredContent, schemas[name])
            check(not result.isError, f"{over}: {name}: {result.structuredContent}")
            if state:
                check(result.structuredContent.get("state") == state, f"{over}: {name}: {state}")

    params = StdioServerParameters(command=BINARY, args=[], cwd=ROOT)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session_checks(session, "stdio")
    http = subprocess.Popen([BINARY, "--http", "127.0.0.1:0"], cwd=ROOT, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    url = http.stderr.readline().split("serving MCP at ")[-1].strip()
    try:
        async with streamablehttp_client(url) as (read, write, _):
            async with ClientSession(read, write) as session:
                await session_checks(session, "http")
    finally:
        http.terminate()
        http.wait(timeout=30)
    print(f"SDK 1.x: {passed} passed, {failed} failed")
    return failed


if __name__ == "__main__":
    import mcp

    run = main if hasattr(mcp, "Client") else one_x
    sys.exit(1 if asyncio.run(run()) else 0)
