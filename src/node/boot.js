// Loaded by debug-mcp into every Node process of a program it follows (`--require` in
// NODE_OPTIONS). A process with no inspector of its own opens one on a free loopback port, tells
// debug-mcp where over a private named pipe (never stderr: children's stderr is often piped into
// their parent), and waits until debug-mcp has set its breakpoints and lets it run. Nothing here
// may throw or hang: when debug-mcp is not listening (the pipe is gone, or nobody reads it) the
// process runs undebugged, as it would without us.
(() => {
  const channel = process.env.DEBUG_MCP_CHANNEL;
  if (!channel) return;
  // The process debug-mcp started (marked while it waited for the debugger), or one started
  // with an inspector flag, opens its own: known without loading `inspector` or
  // `worker_threads`, 27 of Node's modules, which the debugger would report and hash.
  if (process[Symbol.for('debug-mcp.inspected')]) return;
  if (process.execArgv.some((a) => /^--inspect(-brk|-wait)?(=|$)/.test(a))) return;
  let inspector, fs;
  try {
    if (!require('worker_threads').isMainThread) return; // workers come through their parent
    inspector = require('inspector');
    fs = require('fs');
  } catch {
    return;
  }
  if (inspector.url()) return; // the process debug-mcp started, or one with its own flag
  let fd;
  try {
    // Non-blocking: fails at once (ENXIO) when nobody has the pipe open for reading.
    fd = fs.openSync(channel, fs.constants.O_WRONLY | fs.constants.O_NONBLOCK);
  } catch {
    return;
  }
  try {
    inspector.open(0, '127.0.0.1', false);
    const report = {
      pid: process.pid,
      ppid: process.ppid,
      url: inspector.url(),
      argv: process.argv,
      execArgv: process.execArgv,
    };
    // One write of one line: atomic on a pipe up to 4 KiB, so reports of processes starting
    // together never interleave.
    let line = JSON.stringify(report) + '\n';
    if (Buffer.byteLength(line) > 4000) {
      report.argv = process.argv.slice(0, 2);
      line = JSON.stringify(report) + '\n';
    }
    fs.writeSync(fd, line);
  } catch {
    try { inspector.close(); } catch {}
    return;
  } finally {
    fs.closeSync(fd);
  }
  inspector.waitForDebugger();
})();
