#!/usr/bin/env node
// debug-mcp through the official MCP TypeScript clients, over stdio and over Streamable HTTP
// (`--http`), as a real client uses them: the 2.x
// client (`@modelcontextprotocol/client`) in each of its modes (`auto` and a pin to 2026-07-28
// speak the stateless revision, `legacy` the handshake), and the 1.x client
// (`@modelcontextprotocol/sdk`, the handshake). Each runs a debug-script call with progress and a
// session (our own Python debugger, then Node), and checks the answers against each tool's
// outputSchema (the 2.x client validates structuredContent itself too). Run by .ci/run after
// `npm install --prefix fixtures`; locally: node tests/clients/ts_sdk.mjs
// Prints `N passed, 0 failed` and exits 1 on any failure.

import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const binary = process.env.DEBUG_MCP_BIN || path.join(root, 'target/release/debug-mcp-server');
const python = process.env.DEBUG_MCP_TEST_PYTHON || 'python3';
const require = createRequire(path.join(root, 'fixtures/package.json'));
const load = (name) => import(pathToFileURL(require.resolve(name)).href);

let passed = 0;
let failed = 0;
function check(ok, what) {
  if (ok) passed += 1;
  else {
    failed += 1;
    console.error(`FAILED: ${what}`);
  }
}

/** A structuredContent against a JSON schema's required fields and property types, as far as
 * the outputSchemas use them (objects, arrays, strings, numbers, booleans, enums). */
function fits(value, schema, where = '$') {
  if (!schema || typeof schema !== 'object') return [];
  const types = [].concat(schema.type || []);
  const kind = Array.isArray(value) ? 'array' : value === null ? 'null' : Number.isInteger(value) ? 'integer' : typeof value;
  const ok = types.length === 0 || types.some((t) => t === kind || (t === 'number' && kind === 'integer'));
  if (!ok) return [`${where}: ${kind} is not ${types.join('|')}`];
  if (schema.enum && !schema.enum.some((e) => JSON.stringify(e) === JSON.stringify(value))) return [`${where}: not in enum`];
  const errors = [];
  if (kind === 'object') {
    for (const name of schema.required || []) if (!(name in value)) errors.push(`${where}: missing ${name}`);
    for (const [name, sub] of Object.entries(schema.properties || {})) if (name in value) errors.push(...fits(value[name], sub, `${where}.${name}`));
  }
  if (kind === 'array' && schema.items) value.forEach((item, i) => errors.push(...fits(item, schema.items, `${where}[${i}]`)));
  return errors;
}

async function drive(label, client, v1) {
  const { tools } = await client.listTools();
  const schemas = Object.fromEntries(tools.map((t) => [t.name, t.outputSchema]));
  check(tools.length === 13, `${label}: ${tools.length} tools`);
  const call = async (name, args, extra) => {
    // 1.x takes a result schema before the options; 2.x the options only.
    const options = { timeout: 60000, ...extra };
    const result = v1
      ? await client.callTool({ name, arguments: args }, undefined, options)
      : await client.callTool({ name, arguments: args }, options);
    const errors = fits(result.structuredContent, schemas[name]);
    check(errors.length === 0, `${label}: ${name}: ${errors.join('; ')}`);
    return result;
  };
  const progress = [];
  const script = await call('debug-script', { command: 'node fixtures/count.js 2000', breakpoint: { file: 'fixtures/count.js', line: 6 }, expression: 'i' },
    { onprogress: (p) => progress.push(p.progress) });
  check(script.structuredContent.results.length === 2000, `${label}: debug-script results`);
  check(progress.length >= 1, `${label}: progress ${progress}`);
  for (const [command, file] of [[`${python} fixtures/py/loop.py`, 'fixtures/py/loop.py'], ['node fixtures/loop.js', 'fixtures/loop.js']]) {
    const launched = await call('debug-launch', { command, breakpoints: [{ file, line: 5 }] });
    check(launched.structuredContent.state === 'paused', `${label}: ${command}: ${JSON.stringify(launched.structuredContent).slice(0, 300)}`);
    const value = await call('debug-evaluate', { expression: 'total' });
    check(value.structuredContent.value === 0, `${label}: total ${JSON.stringify(value.structuredContent)}`);
    const stepped = await call('debug-continue', { step: 'over' });
    check(stepped.structuredContent.state === 'paused', `${label}: step`);
    await call('debug-stop', {});
  }
}

// The same over Streamable HTTP (`--http`, a free loopback port).
const { spawn } = await import('node:child_process');
const http = spawn(binary, ['--http', '127.0.0.1:0'], { cwd: root, stdio: ['ignore', 'ignore', 'pipe'] });
const url = await new Promise((resolve) => {
  let said = '';
  http.stderr.on('data', (chunk) => {
    said += chunk;
    const found = said.match(/serving MCP at (\S+)/);
    if (found) resolve(new URL(found[1]));
  });
});

const { Client, StreamableHTTPClientTransport } = await load('@modelcontextprotocol/client');
const { StdioClientTransport } = await load('@modelcontextprotocol/client/stdio');
for (const over of ['stdio', 'http']) {
  for (const [mode, era] of [['auto', '2026-07-28'], [{ pin: '2026-07-28' }, '2026-07-28'], ['legacy', '2025-11-25']]) {
    const label = `2.x ${JSON.stringify(mode)} over ${over}`;
    const client = new Client({ name: 'debug-mcp-check', version: '1.0.0' }, { versionNegotiation: { mode } });
    const transport = over === 'stdio' ? new StdioClientTransport({ command: binary, args: [], cwd: root }) : new StreamableHTTPClientTransport(url);
    await client.connect(transport);
    check(client.getNegotiatedProtocolVersion() === era, `${label}: version ${client.getNegotiatedProtocolVersion()}`);
    await drive(label, client);
    await client.close();
  }
}
const v1 = await import(pathToFileURL(require.resolve('@modelcontextprotocol/sdk/client/index.js')).href);
const v1stdio = await import(pathToFileURL(require.resolve('@modelcontextprotocol/sdk/client/stdio.js')).href);
const v1http = await import(pathToFileURL(require.resolve('@modelcontextprotocol/sdk/client/streamableHttp.js')).href);
for (const over of ['stdio', 'http']) {
  const client = new v1.Client({ name: 'debug-mcp-check', version: '1.0.0' });
  const transport = over === 'stdio' ? new v1stdio.StdioClientTransport({ command: binary, args: [], cwd: root }) : new v1http.StreamableHTTPClientTransport(url);
  await client.connect(transport);
  check(client.getServerVersion()?.name === 'debug-mcp', `1.x over ${over}: server ${JSON.stringify(client.getServerVersion())}`);
  await drive(`1.x over ${over}`, client, true);
  await client.close();
}
http.kill('SIGTERM');
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
