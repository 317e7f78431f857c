/**
 * The cost of the protocol layer itself: the same requests over HTTP in the two MCP eras, measured in
 * one run, interleaved. 2025-11-25 requests (no envelope) are the baseline; 2026-07-28 requests carry
 * the `_meta` envelope and the mirrored headers, and their results are dressed (resultType, serverInfo,
 * cache hints). `tools/list` touches no database, so it shows the dispatcher alone; a 7-day order
 * count adds one query.
 *
 *   npm run bench:protocol -- [--seconds 8] [--concurrency 8]
 *
 * It starts `serve --http` on a fresh embedded database in a temporary folder (50,000 demo orders).
 */
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { cpuMs, runFor, startServer } from './measure.js';

const { values } = parseArgs({
  options: { seconds: { type: 'string', default: '8' }, concurrency: { type: 'string', default: '8' } },
});
const SECONDS = Number(values.seconds);
const CONCURRENCY = Number(values.concurrency);
const ROUNDS = 4;

interface Path {
  readonly label: string;
  readonly era: '2025-11-25' | '2026-07-28';
  readonly method: string;
  readonly params: Record<string, unknown>;
}

const today = new Date().toISOString().slice(0, 10);
const weekAgo = new Date(Date.now() - 6 * 86_400_000).toISOString().slice(0, 10);
const count = { name: 'query_order_count', arguments: { start_date: weekAgo, end_date: today } };
const PATHS: Path[] = [
  { label: 'tools/list', era: '2025-11-25', method: 'tools/list', params: {} },
  { label: 'tools/list', era: '2026-07-28', method: 'tools/list', params: {} },
  { label: 'tools/call, 7-day count', era: '2025-11-25', method: 'tools/call', params: count },
  { label: 'tools/call, 7-day count', era: '2026-07-28', method: 'tools/call', params: count },
];

function caller(url: string, path: Path): () => Promise<void> {
  const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  const modern = path.era === '2026-07-28';
  const params = modern
    ? {
        ...path.params,
        _meta: {
          'io.modelcontextprotocol/protocolVersion': path.era,
          'io.modelcontextprotocol/clientCapabilities': {},
          'io.modelcontextprotocol/clientInfo': { name: 'bench', version: '1.0.0' },
        },
      }
    : path.params;
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: path.method, params });
  const headers: Record<string, string | number> = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'content-length': Buffer.byteLength(body),
    'mcp-protocol-version': path.era,
  };
  if (modern) {
    headers['mcp-method'] = path.method;
    if (typeof path.params.name === 'string') headers['mcp-name'] = path.params.name;
  }
  return () =>
    new Promise((done, fail) => {
      const req = request(url, { method: 'POST', agent, headers }, (res) => {
        let text = '';
        res.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
        res.on('end', () => {
          const reply = JSON.parse(text) as { result?: { isError?: boolean } };
          if (res.statusCode !== 200 || !reply.result || reply.result.isError) {
            fail(new Error(`bad reply: ${text.slice(0, 300)}`));
          } else done();
        });
      });
      req.on('error', fail);
      req.end(body);
    });
}

async function main(): Promise<void> {
  const dataDir = await mkdtemp(join(tmpdir(), 'querygate-bench-protocol-'));
  await chmod(dataDir, 0o755); // as root, the embedded PostgreSQL runs as a user who must reach it
  const auditLog = `${dataDir}-audit.log`;
  await writeFile(auditLog, '', { mode: 0o600 });
  const server = await startServer(['serve', '--http', '--port', '0'], {
    QUERYGATE_DATA_DIR: dataDir,
    // The audit lines go to a file, as in production, not through a pipe to this process.
    QUERYGATE_AUDIT_LOG: auditLog,
    QUERYGATE_RATE_LIMIT: '100000000',
    QUERYGATE_MAX_CONCURRENT: '64',
  });
  try {
    const state = PATHS.map((path) => ({
      path,
      call: caller(server.url, path),
      calls: 0,
      seconds: 0,
      cpu: 0,
      lat: [] as number[],
    }));
    for (const one of state) await runFor(one.call, CONCURRENCY, 1000); // warm-up
    const slice = (SECONDS * 1000) / ROUNDS;
    for (let round = 0; round < ROUNDS; round++) {
      for (let i = 0; i < state.length; i++) {
        const one = state[(i + round) % state.length]!;
        const cpuBefore = await cpuMs(server.pid);
        const started = performance.now();
        one.calls += await runFor(one.call, CONCURRENCY, slice, one.lat);
        one.seconds += (performance.now() - started) / 1000;
        one.cpu += (await cpuMs(server.pid)) - cpuBefore;
      }
    }
    const lines = [
      `HTTP, concurrency ${CONCURRENCY}, ${SECONDS} s a path in ${ROUNDS} interleaved rounds, on ${new Date().toISOString().slice(0, 10)}:`,
      '',
      '| request | era | requests/s | p50 ms | server CPU ms/request | ratio to 2025-11-25 |',
      '| --- | --- | --- | --- | --- | --- |',
    ];
    for (const one of state) {
      one.lat.sort((a, b) => a - b);
      const rate = one.calls / one.seconds;
      const legacy = state.find((s) => s.path.label === one.path.label && s.path.era === '2025-11-25')!;
      const ratio = rate / (legacy.calls / legacy.seconds);
      lines.push(
        `| ${one.path.label} | ${one.path.era} | ${rate.toFixed(0)} | ${one.lat[Math.floor(one.lat.length / 2)]!.toFixed(2)} | ${(one.cpu / one.calls).toFixed(3)} | ${ratio.toFixed(2)}x |`,
      );
    }
    process.stdout.write(`${lines.join('\n')}\n`);
  } finally {
    await server.stop();
    await rm(dataDir, { recursive: true, force: true });
    await rm(auditLog, { force: true });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
