#!/usr/bin/env node
// Runs the debug-mcp binary of this platform's package (an optional dependency, installed by
// npm for the platform it matches: the way esbuild and biome ship native binaries). The
// binary speaks MCP on stdin and stdout: both are passed through untouched, its exit status
// is this process's, and the signals a client sends (SIGTERM, SIGINT, SIGHUP) reach it.
"use strict";

const { spawn } = require("node:child_process");
const path = require("node:path");

// The platforms served, by Node's platform and architecture: their packages.
const PACKAGES = {
  "linux-x64": "debug-mcp-server-linux-x64",
};

function binary() {
  const platform = `${process.platform}-${process.arch}`;
  const name = PACKAGES[platform];
  if (name) {
    try {
      return path.join(path.dirname(require.resolve(`${name}/package.json`)), "bin", "debug-mcp-server");
    } catch {
      fail(`its package for ${platform}, ${name}, is not installed (was it left out with ` +
        `--no-optional or --omit=optional?): reinstall debug-mcp-server with optional dependencies`);
    }
  }
  fail(`there is no prebuilt binary for ${platform} (served: ${Object.keys(PACKAGES).join(", ")})`);
}

function fail(why) {
  process.stderr.write(`debug-mcp-server: ${why}. Or build it from source with Rust: ` +
    "`cargo install debug-mcp-server`, then run `debug-mcp-server`.\n");
  process.exit(1);
}

const child = spawn(binary(), process.argv.slice(2), { stdio: "inherit" });
for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"]) {
  process.on(signal, () => child.kill(signal));
}
child.on("error", (error) => fail(`cannot start ${error.path || "the binary"}: ${error.message}`));
child.on("exit", (code, signal) => {
  if (signal) {
    // Ended by a signal: end the same way, so the caller sees it.
    for (const name of ["SIGTERM", "SIGINT", "SIGHUP"]) {
      process.removeAllListeners(name);
    }
    process.kill(process.pid, signal);
  } else {
    process.exit(code);
  }
});
